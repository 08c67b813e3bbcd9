import { createHash } from "node:crypto";
import { readdir, readFile, rename, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Abi, Hex } from "viem";

export type CompiledContract = { abi: Abi; bytecode: Hex };
export type CompiledContracts = Record<string, CompiledContract>;

const CONTRACTS_DIR = new URL("./contracts/", import.meta.url);

// Cancun: supported by anvil's default (newer) hardfork, and selfdestruct
// still compiles there (only a deprecation warning).
const EVM_VERSION = "cancun";

type SolcOutput = {
	errors?: Array<{ severity: string; formattedMessage: string }>;
	contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
};

let cached: Promise<CompiledContracts> | undefined;

/**
 * Compiles every contracts/*.sol with the solc-js bundled in node_modules
 * (never downloads a compiler). Keyed by contract name, e.g. "Token20",
 * "Child". Memoized per process because loading solc's wasm is slow, and
 * across processes in a file of the system's temp folder named by the hash
 * of solc's version and the whole compiler input (sources and settings): each
 * test file runs in a fresh module context and compiling took ~3 s of CPU.
 */
export function compileContracts(): Promise<CompiledContracts> {
	cached ??= doCompile().catch((err: unknown) => {
		cached = undefined; // allow a retry after e.g. a syntax fix
		throw err;
	});
	return cached;
}

async function doCompile(): Promise<CompiledContracts> {
	const files = (await readdir(CONTRACTS_DIR)).filter((f) => f.endsWith(".sol")).sort();
	const sources: Record<string, { content: string }> = {};
	for (const file of files) {
		sources[file] = {
			content: await readFile(new URL(file, CONTRACTS_DIR), "utf8"),
		};
	}
	const input = {
		language: "Solidity",
		sources,
		settings: {
			optimizer: { enabled: true, runs: 200 },
			evmVersion: EVM_VERSION,
			outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
		},
	};

	const version = (createRequire(import.meta.url)("solc/package.json") as { version: string }).version;
	const cachePath = join(
		tmpdir(),
		`chainlake-solc-${createHash("sha256")
			.update(`${version}\n${JSON.stringify(input)}`)
			.digest("hex")
			.slice(0, 32)}.json`,
	);
	try {
		const result = JSON.parse(await readFile(cachePath, "utf8")) as CompiledContracts;
		if (Object.keys(result).length > 0) return result;
	} catch {
		// Not compiled yet (or a torn file of another writer): compile.
	}

	// Lazy import: only pay for loading solc when something actually compiles.
	const solc = (await import("solc")).default;
	const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;

	const errors = (output.errors ?? []).filter((e) => e.severity === "error");
	if (errors.length > 0) {
		throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join("\n")}`);
	}

	const result: CompiledContracts = {};
	for (const [file, contracts] of Object.entries(output.contracts ?? {})) {
		for (const [name, c] of Object.entries(contracts)) {
			if (result[name]) throw new Error(`duplicate contract name ${name} in ${file}`);
			result[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
		}
	}
	// Written whole under a name of this process, then renamed: a reader sees all of it or none.
	const partial = `${cachePath}.${process.pid}.tmp`;
	await writeFile(partial, JSON.stringify(result));
	await rename(partial, cachePath);
	return result;
}
