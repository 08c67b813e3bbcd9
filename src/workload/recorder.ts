import type { Address, Hex, TransactionReceipt } from "viem";
import type { ExpectedCreation, ExpectedSelfDestruct, ExpectedTransfer, NativeVia, WorkloadTx } from "./types.js";

export const ZERO: Address = "0x0000000000000000000000000000000000000000";
export const lower = (a: string) => a.toLowerCase() as Address;

const at = (t: WorkloadTx) => ({ txHash: t.hash, blockNumber: t.blockNumber });

/** Collects what the workload did and what an indexer must therefore find. */
export class Recorder {
	readonly txs: WorkloadTx[] = [];
	readonly transfers: ExpectedTransfer[] = [];
	readonly creations: ExpectedCreation[] = [];
	readonly selfDestructs: ExpectedSelfDestruct[] = [];

	/** Records a mined tx; a successful tx's value is a native transfer. */
	tx(label: string, r: TransactionReceipt, value: bigint): WorkloadTx {
		const t: WorkloadTx = {
			label,
			hash: r.transactionHash,
			blockNumber: Number(r.blockNumber),
			transactionIndex: r.transactionIndex,
			status: r.status,
			from: lower(r.from),
			to: r.to ? lower(r.to) : null,
			contractAddress: r.contractAddress ? lower(r.contractAddress) : null,
			value: value.toString(),
		};
		this.txs.push(t);
		const target = t.to ?? t.contractAddress;
		if (t.status === "success" && value > 0n && target) {
			this.native(t, "tx", t.from, target, value);
		}
		return t;
	}

	native(t: WorkloadTx, via: NativeVia, from: Address, to: Address, wei: bigint) {
		this.push(t, "native", null, from, to, { via, value: wei.toString() });
	}

	erc20(t: WorkloadTx, token: Address, from: Address, to: Address, amount: bigint) {
		this.push(t, "erc20", token, from, to, { value: amount.toString() });
	}

	erc721(t: WorkloadTx, token: Address, from: Address, to: Address, id: bigint) {
		this.push(t, "erc721", token, from, to, { tokenId: id.toString() });
	}

	erc1155(
		t: WorkloadTx,
		token: Address,
		[operator, from, to]: [Address, Address, Address],
		id: bigint,
		amount: bigint,
	) {
		this.push(t, "erc1155", token, from, to, {
			operator,
			tokenId: id.toString(),
			value: amount.toString(),
		});
	}

	erc1155Batch(
		t: WorkloadTx,
		token: Address,
		[operator, from, to]: [Address, Address, Address],
		ids: bigint[],
		amounts: bigint[],
	) {
		this.push(t, "erc1155", token, from, to, {
			operator,
			tokenIds: ids.map(String),
			values: amounts.map(String),
		});
	}

	creation(t: WorkloadTx, c: Omit<ExpectedCreation, "txHash" | "blockNumber" | "origin">) {
		this.creations.push({ ...at(t), origin: t.from, ...c });
	}

	selfDestruct(t: WorkloadTx, s: Omit<ExpectedSelfDestruct, "txHash" | "blockNumber">) {
		this.selfDestructs.push({ ...at(t), ...s });
	}

	/** Puts everything in chain order (stable: keeps execution order in a tx). */
	sort(): void {
		const index = new Map(this.txs.map((t) => [t.hash, t.transactionIndex]));
		const byChain = (a: { blockNumber: number; txHash: Hex }, b: { blockNumber: number; txHash: Hex }) =>
			a.blockNumber - b.blockNumber || (index.get(a.txHash) ?? 0) - (index.get(b.txHash) ?? 0);
		this.txs.sort((a, b) => a.blockNumber - b.blockNumber || a.transactionIndex - b.transactionIndex);
		this.transfers.sort(byChain);
		this.creations.sort(byChain);
		this.selfDestructs.sort(byChain);
	}

	erc20Balances(token: Address): Record<Address, string> {
		const bal = new Map<Address, bigint>();
		for (const t of this.transfers) {
			if (t.kind !== "erc20" || t.contract !== token || !t.value) continue;
			const v = BigInt(t.value);
			if (t.from !== ZERO) bal.set(t.from, (bal.get(t.from) ?? 0n) - v);
			bal.set(t.to, (bal.get(t.to) ?? 0n) + v);
		}
		return Object.fromEntries([...bal].map(([a, v]) => [a, v.toString()]));
	}

	erc721Owners(token: Address): Record<string, Address> {
		const owners: Record<string, Address> = {};
		for (const t of this.transfers) {
			if (t.kind === "erc721" && t.contract === token && t.tokenId) {
				owners[t.tokenId] = t.to;
			}
		}
		return owners;
	}

	private push(
		t: WorkloadTx,
		kind: ExpectedTransfer["kind"],
		contract: Address | null,
		from: Address,
		to: Address,
		fields: Partial<ExpectedTransfer>,
	) {
		this.transfers.push({
			...at(t),
			kind,
			via: null,
			from,
			to,
			contract,
			value: null,
			tokenId: null,
			...fields,
		});
	}
}
