/**
 * `npm run keys -- create [--name N]` prints a new API key once and stores only its hash;
 * `npm run keys -- list` shows ids and names; `npm run keys -- revoke <id>` revokes one.
 * Options: --data-dir (default data) or --keys-file.
 */
import { parseArgs } from "node:util";
import { createKey, KeysFileError, readKeys, revokeKey } from "../src/api/keys.js";
import { keysPath } from "../src/api/keys-path.js";

const { values, positionals } = parseArgs({
	allowPositionals: true,
	options: {
		"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR ?? "data" },
		"keys-file": { type: "string" },
		name: { type: "string", default: "default" },
	},
});
const path = keysPath(values["data-dir"] as string, values["keys-file"]);
const [command, arg] = positionals;
/** A damaged key file: say which and how to fix it (exit 1), and write nothing over it. */
function orDamaged<T>(run: () => T): T {
	try {
		return run();
	} catch (err) {
		if (!(err instanceof KeysFileError)) throw err;
		process.stderr.write(`${err.message}\n`);
		process.exit(1);
	}
}
if (command === "create") {
	const { key, id } = orDamaged(() => createKey(path, values.name as string));
	process.stderr.write(
		`created key ${id} (${values.name}); its hash is stored in ${path}. The key is shown only now:\n`,
	);
	process.stdout.write(`${key}\n`);
} else if (command === "list") {
	for (const k of orDamaged(() => readKeys(path))) {
		process.stdout.write(`${k.id}\t${k.name}\t${k.created_at}${k.revoked_at ? `\trevoked ${k.revoked_at}` : ""}\n`);
	}
} else if (command === "revoke" && arg) {
	if (!orDamaged(() => revokeKey(path, arg))) {
		process.stderr.write(`no active key with id ${arg} in ${path} (see npm run keys -- list)\n`);
		process.exit(2);
	}
	process.stderr.write(`revoked key ${arg}\n`);
} else {
	process.stderr.write(
		"usage: npm run keys -- create [--name N] | list | revoke <id>   [--data-dir data | --keys-file F]\n",
	);
	process.exit(2);
}
