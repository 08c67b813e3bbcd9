import { readdir, readFile } from "node:fs/promises";
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
 * "Child". Memoized per process because loading solc's wasm is slow.
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
	return result;
}
