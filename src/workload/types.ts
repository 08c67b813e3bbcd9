import type { Address, Hex } from "viem";

export type TransferKind = "native" | "erc20" | "erc721" | "erc1155";

/** How native value moved; null for token transfers (which come from logs). */
export type NativeVia = "tx" | "call" | "create" | "create2" | "selfdestruct";

/**
 * One value movement the chain must show. Native rows come from the tx value
 * ("tx", incl. value-carrying deploy txs) and from traces; token rows from
 * logs, one row per log (an ERC-1155 TransferBatch is one row with
 * `tokenIds`/`values`). Gas fees are not transfers.
 */
export type ExpectedTransfer = {
	txHash: Hex;
	blockNumber: number;
	kind: TransferKind;
	via: NativeVia | null;
	from: Address;
	to: Address;
	/** Token contract; null for native. */
	contract: Address | null;
	/** Decimal wei / ERC-20 units / ERC-1155 single amount; null for ERC-721 and ERC-1155 batches. */
	value: string | null;
	/** ERC-721 / ERC-1155 single id (decimal); null otherwise. */
	tokenId: string | null;
	/** ERC-1155 batch only (parallel arrays). */
	tokenIds?: string[];
	values?: string[];
	/** ERC-1155 only: msg.sender of the token call. */
	operator?: Address;
};

export type ExpectedCreation = {
	txHash: Hex;
	blockNumber: number;
	contract: Address;
	/** The EOA for deploy transactions, the factory for nested creates. */
	caller: Address;
	/** tx.from */
	origin: Address;
	value: string;
	opCode: "CREATE" | "CREATE2";
	/** true for contract-creation transactions (to = null). */
	topLevel: boolean;
};

export type ExpectedSelfDestruct = {
	txHash: Hex;
	blockNumber: number;
	contract: Address;
	beneficiary: Address;
	/** msg.sender of the frame that executed SELFDESTRUCT. */
	caller: Address;
	value: string;
};

/** A transaction the workload sent. */
export type WorkloadTx = {
	label: string;
	hash: Hex;
	blockNumber: number;
	transactionIndex: number;
	status: "success" | "reverted";
	from: Address;
	/** null for contract-creation transactions. */
	to: Address | null;
	contractAddress: Address | null;
	/** Top-level value in wei (decimal). */
	value: string;
};

export type WorkloadAccounts = {
	deployer: Address;
	alice: Address;
	bob: Address;
	carol: Address;
	dave: Address;
};

export type WorkloadContracts = {
	token20: Address;
	token721: Address;
	token1155: Address;
	factory: Address;
	/** Child created by Factory.deploy() (CREATE, with value). */
	createChild: Address;
	/** Child created by Factory.deploy2(create2Salt) (CREATE2, no value). */
	create2Child: Address;
	selfDestructor: Address;
	forwarder: Address;
	reverter: Address;
	oddLogger: Address;
};

/** Addresses are lowercase hex, amounts decimal strings, lists in chain order. */
export type WorkloadResult = {
	chainId: number;
	accounts: WorkloadAccounts;
	contracts: WorkloadContracts;
	create2Salt: Hex;
	firstBlock: number;
	lastBlock: number;
	txs: WorkloadTx[];
	expected: {
		/** Sorted by (block, tx index), then execution order within a tx. */
		transfers: ExpectedTransfer[];
		creations: ExpectedCreation[];
		selfDestructs: ExpectedSelfDestruct[];
		/** Mined with status 0; emitted a Transfer log and made a value call before reverting. */
		revertedTxHash: Hex;
		/** Succeeds, but its inner Reverter.boom() frame (value call + log) is reverted. */
		innerRevertTxHash: Hex;
		/** Emits `oddLogCount` logs with the Transfer topic0 but a non-standard shape. */
		oddLogTxHash: Hex;
		oddLogCount: number;
		/** txHashes in block order. */
		multiTxBlock: { number: number; txHashes: Hex[] };
		/** Final ERC-20 balance of every holder, derived from `transfers`. */
		erc20Balances: Record<Address, string>;
		/** Final ERC-721 owner per (decimal) token id, derived from `transfers`. */
		erc721Owners: Record<string, Address>;
	};
};
