/**
 * `npm run keys -- create [--name N]` prints a new API key once and stores only its hash;
 * `npm run keys -- list` shows ids and names; `npm run keys -- revoke <id>` revokes one.
 * Options: --data-dir (default data) or --keys-file. A damaged key file is named with its fix
 * (exit 1) and nothing is written over it; failures go through src/util/cli.ts.
 */
import { parseArgs } from "node:util";
import { createKey, readKeys, revokeKey } from "../src/api/keys.js";
import { keysPath } from "../src/api/keys-path.js";
import { startCli, usageError } from "../src/util/cli.js";

const USAGE = `usage: npm run keys -- create [--name N] | list | revoke <id>   [--data-dir data | --keys-file F]
  create                 make a key: printed once on stdout, only its hash is stored
  list                   the keys' ids, names and dates
  revoke <id>            revoke a key (its id from list)
  --name <name>          with create: a name to tell keys apart (default "default")
  --data-dir <dir>       the lake's folder, whose _keys.json holds the keys (CHAINLAKE_DATA_DIR; default data)
  --keys-file <file>     the key file itself (CHAINLAKE_KEYS_FILE; default <data-dir>/_keys.json)`;

const argv = startCli({ usage: USAGE, dataDir: () => values["data-dir"] });
const { values, positionals } = parseArgs({
	args: argv,
	allowPositionals: true,
	options: {
		"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR ?? "data" },
		"keys-file": { type: "string" },
		name: { type: "string", default: "default" },
	},
});
const path = keysPath(values["data-dir"] as string, values["keys-file"]);
const [command, arg] = positionals;
if (command === "create") {
	const { key, id } = createKey(path, values.name as string);
	process.stderr.write(
		`created key ${id} (${values.name}); its hash is stored in ${path}. The key is shown only now:\n`,
	);
	process.stdout.write(`${key}\n`);
} else if (command === "list") {
	for (const k of readKeys(path)) {
		process.stdout.write(`${k.id}\t${k.name}\t${k.created_at}${k.revoked_at ? `\trevoked ${k.revoked_at}` : ""}\n`);
	}
} else if (command === "revoke" && arg) {
	if (!revokeKey(path, arg)) usageError(`no active key with id ${arg} in ${path} (see npm run keys -- list)`);
	process.stderr.write(`revoked key ${arg}\n`);
} else {
	usageError(
		`${command ? `unknown command ${JSON.stringify(command)}` : "a command is required: create, list or revoke <id>"}\n${USAGE}`,
	);
}
