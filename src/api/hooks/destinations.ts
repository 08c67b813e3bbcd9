import type { LookupAddress } from "node:dns";
import { lookup } from "node:dns";
import { BlockList, isIP } from "node:net";

/*
 * Which destinations a hook may POST to (no server-side request forgery): the operator's
 * `--hook-allow-hosts`, a comma-separated list of
 *   public          any host whose every address is public unicast (the default)
 *   hooks.example   that host name (and whatever it resolves to), `*.example.com` its subdomains
 *   10.0.0.7, ::1   that address, `10.0.0.0/8`, `fd00::/8` that range (by literal or resolved address)
 * Everything else is refused: other schemes than http and https, credentials in the URL, and
 * addresses that are not public (loopback, private, shared, link-local with the cloud metadata
 * service, multicast, reserved, documentation, IPv4 inside IPv6 by NAT64, 6to4 or Teredo).
 * Checked when a hook is made and again at every delivery, on the addresses the name resolves to
 * then (the connection goes to one of the checked addresses: a name cannot resolve to a public
 * address when checked and a private one when connected).
 */

export interface HostPolicy {
	public: boolean;
	names: Set<string>;
	suffixes: string[];
	ranges: BlockList;
	/** The flag's value, for messages. */
	text: string;
}

/** Special-purpose ranges (IANA registries), each with the reason a refusal gives. */
const SPECIAL: [string, number, "ipv4" | "ipv6", string][] = [
	["0.0.0.0", 8, "ipv4", "a 'this network' address (0.0.0.0/8)"],
	["10.0.0.0", 8, "ipv4", "a private address (10.0.0.0/8)"],
	["100.64.0.0", 10, "ipv4", "a shared (carrier-grade NAT) address (100.64.0.0/10)"],
	["127.0.0.0", 8, "ipv4", "a loopback address (127.0.0.0/8)"],
	["169.254.0.0", 16, "ipv4", "a link-local address (169.254.0.0/16, where cloud metadata services answer)"],
	["172.16.0.0", 12, "ipv4", "a private address (172.16.0.0/12)"],
	["192.0.0.0", 24, "ipv4", "an IETF protocol address (192.0.0.0/24)"],
	["192.0.2.0", 24, "ipv4", "a documentation address (192.0.2.0/24)"],
	["192.88.99.0", 24, "ipv4", "a 6to4 relay address (192.88.99.0/24)"],
	["192.168.0.0", 16, "ipv4", "a private address (192.168.0.0/16)"],
	["198.18.0.0", 15, "ipv4", "a benchmarking address (198.18.0.0/15)"],
	["198.51.100.0", 24, "ipv4", "a documentation address (198.51.100.0/24)"],
	["203.0.113.0", 24, "ipv4", "a documentation address (203.0.113.0/24)"],
	["224.0.0.0", 4, "ipv4", "a multicast address (224.0.0.0/4)"],
	["240.0.0.0", 4, "ipv4", "a reserved address (240.0.0.0/4, with the broadcast address)"],
	["::", 128, "ipv6", "the unspecified address (::)"],
	["::1", 128, "ipv6", "a loopback address (::1)"],
	["64:ff9b::", 96, "ipv6", "a NAT64 address (64:ff9b::/96, an IPv4 address inside IPv6)"],
	["64:ff9b:1::", 48, "ipv6", "a NAT64 address (64:ff9b:1::/48)"],
	["100::", 64, "ipv6", "a discard address (100::/64)"],
	["2001::", 23, "ipv6", "an IETF protocol address (2001::/23, Teredo included)"],
	["2001:db8::", 32, "ipv6", "a documentation address (2001:db8::/32)"],
	["2002::", 16, "ipv6", "a 6to4 address (2002::/16, an IPv4 address inside IPv6)"],
	["fc00::", 7, "ipv6", "a unique local (private) address (fc00::/7)"],
	["fe80::", 10, "ipv6", "a link-local address (fe80::/10)"],
	["fec0::", 10, "ipv6", "a site-local address (fec0::/10)"],
	["ff00::", 8, "ipv6", "a multicast address (ff00::/8)"],
];
const SPECIAL_LISTS = SPECIAL.map(([net, prefix, type, reason]) => {
	const list = new BlockList();
	list.addSubnet(net, prefix, type);
	return { list, reason };
});
/** Global unicast IPv6 is 2000::/3; the rest (but IPv4-mapped addresses, checked as IPv4) is not public. */
const GLOBAL_V6 = new BlockList();
GLOBAL_V6.addSubnet("2000::", 3, "ipv6");
const MAPPED_V4 = new BlockList();
MAPPED_V4.addSubnet("::ffff:0:0", 96, "ipv6");

/** Why `ip` is not a public unicast address, or null when it is. */
export function addressProblem(ip: string): string | null {
	const type = isIP(ip) === 6 ? "ipv6" : "ipv4";
	// BlockList checks an IPv4-mapped IPv6 address (::ffff:127.0.0.1) against the IPv4 ranges too.
	for (const { list, reason } of SPECIAL_LISTS) if (list.check(ip, type)) return reason;
	if (type === "ipv6" && !GLOBAL_V6.check(ip, "ipv6") && !MAPPED_V4.check(ip, "ipv6"))
		return "not a global unicast IPv6 address (2000::/3)";
	return null;
}

/** The policy of `--hook-allow-hosts`; throws an Error naming the entry it cannot read. */
export function parseAllowHosts(text: string): HostPolicy {
	const policy: HostPolicy = { public: false, names: new Set(), suffixes: [], ranges: new BlockList(), text };
	for (const raw of text.split(",")) {
		const entry = raw.trim().toLowerCase();
		if (entry === "") continue;
		if (entry === "public") {
			policy.public = true;
			continue;
		}
		const [addr, bits, more] = entry.replace(/^\[|\]$/g, "").split("/");
		const family = isIP(addr ?? "");
		if (family) {
			const max = family === 4 ? 32 : 128;
			const prefix = bits === undefined ? max : Number(bits);
			if (more !== undefined || !/^\d{1,3}$/.test(bits ?? String(max)) || prefix > max)
				throw new Error(`--hook-allow-hosts: ${raw.trim()} is not an address range (write 10.0.0.0/8 or fd00::/8)`);
			policy.ranges.addSubnet(addr as string, prefix, family === 4 ? "ipv4" : "ipv6");
		} else if (/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/.test(entry)) {
			if (entry.startsWith("*.")) policy.suffixes.push(entry.slice(1).replace(/\.$/, ""));
			else policy.names.add(entry.replace(/\.$/, ""));
		} else {
			throw new Error(
				`--hook-allow-hosts: ${raw.trim()} is neither public, a host name, *.domain, an address nor a range`,
			);
		}
	}
	return policy;
}

export const DEFAULT_ALLOW_HOSTS = "public";

/** Whether the operator allowed this host by its name (then its addresses are not checked). */
function nameAllowed(host: string, policy: HostPolicy): boolean {
	const h = host.replace(/\.$/, "");
	return policy.names.has(h) || policy.suffixes.some((s) => h.endsWith(s));
}

/** Why delivering to `ip` is refused, or null. */
export function addressRefusal(ip: string, policy: HostPolicy): string | null {
	if (policy.ranges.check(ip, isIP(ip) === 6 ? "ipv6" : "ipv4")) return null;
	const problem = addressProblem(ip);
	if (problem) return `${ip} is ${problem}, and --hook-allow-hosts (${policy.text || "empty"}) does not list it`;
	return policy.public ? null : `${ip} is not listed in the server's --hook-allow-hosts (${policy.text || "empty"})`;
}

/** A destination the policy may allow, or why not (the scheme, credentials, a literal address). */
export function destinationProblem(text: string, policy: HostPolicy): { url: URL } | { problem: string } {
	let url: URL;
	try {
		url = new URL(text);
	} catch {
		return { problem: `url ${JSON.stringify(text.slice(0, 200))} is not an absolute URL (write https://host/path)` };
	}
	if (url.protocol !== "https:" && url.protocol !== "http:")
		return { problem: `url scheme ${url.protocol} is not allowed: deliveries are POSTs over https: or http:` };
	if (url.username || url.password)
		return {
			problem: "url carries credentials (user:password@): deliveries are signed with the hook's secret instead",
		};
	const host = url.hostname.replace(/^\[|\]$/g, "");
	if (nameAllowed(host, policy)) return { url };
	if (isIP(host)) {
		const refusal = addressRefusal(host, policy);
		return refusal ? { problem: `url host ${refusal}` } : { url };
	}
	if (!policy.public && policy.ranges.rules.length === 0)
		return { problem: `url host ${host} is not listed in the server's --hook-allow-hosts (${policy.text || "empty"})` };
	return { url };
}

/**
 * The lookup a delivery connects with: the name's addresses, every one checked (a name allowed by
 * the operator is not). A refused address fails the connection, and its message says why.
 */
export function guardedLookup(policy: HostPolicy) {
	return (
		hostname: string,
		options: { family?: number | string; all?: boolean },
		callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
	) => {
		lookup(hostname, { all: true, family: Number(options.family) || 0 }, (err, addresses) => {
			if (err) return callback(err, []);
			if (!nameAllowed(hostname, policy)) {
				for (const a of addresses) {
					const refusal = addressRefusal(a.address, policy);
					if (refusal)
						return callback(
							Object.assign(new Error(`${hostname} resolves to ${refusal}`), { code: "EHOOKREFUSED" }),
							[],
						);
				}
			}
			if (options.all) return callback(null, addresses);
			const first = addresses[0] as LookupAddress;
			callback(null, first.address, first.family);
		});
	};
}

/** At a hook's making: the name's addresses now, each checked (null: allowed, or not resolvable now). */
export async function resolvedProblem(url: URL, policy: HostPolicy): Promise<string | null> {
	const host = url.hostname.replace(/^\[|\]$/g, "");
	if (isIP(host) || nameAllowed(host, policy)) return null;
	return new Promise((resolve) => {
		guardedLookup(policy)(host, { all: true }, (err) => {
			if (!err) return resolve(null);
			if (err.code === "EHOOKREFUSED") return resolve(`url host ${err.message}`);
			if (err.code === "ENOTFOUND") return resolve(`url host ${host} does not resolve (DNS: no such name)`);
			// A passing DNS failure is not the client's mistake: the deliveries will tell.
			resolve(null);
		});
	});
}
