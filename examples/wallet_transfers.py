"""A notebook's session, in Python with pandas: a wallet's transfers as CSV pages, then SQL.

    python3 examples/wallet_transfers.py --url http://127.0.0.1:8080 --key $KEY --chain eip155-31337 --address 0x...

The server needs the SQL endpoint on for the second part (serve --sql, or CHAINLAKE_SQL=1).
Needs pandas only (Debian: python3-pandas); HTTP is the standard library's.
"""
import argparse
import io
import json
import re
import urllib.request

import pandas as pd

parser = argparse.ArgumentParser()
parser.add_argument("--url", default="http://127.0.0.1:8080")
parser.add_argument("--key", required=True)
parser.add_argument("--chain", default="eip155-31337")
parser.add_argument("--address", required=True)
args = parser.parse_args()
address = args.address.lower()
# The address goes into SQL text below: take nothing but an address.
if not re.fullmatch(r"0x[0-9a-f]{40}", address):
    raise SystemExit("--address must be a 0x address of 40 hex digits")
api = f"{args.url}/{args.chain}/v1"
auth = {"Authorization": f"Bearer {args.key}"}


def get(url):
    with urllib.request.urlopen(urllib.request.Request(url, headers=auth)) as res:
        return res.read().decode(), res.headers


# 1. Every transfer of the wallet, a CSV page at a time: the paging state is in headers. Amounts
# are exact decimal text (uint256), read as strings; numbers as numbers.
pages, offset = [], ""
while True:
    url = f"{api}/address/{address}/transfers?asset_type=native,ft,nft&limit=1000&format=csv"
    text, headers = get(url + (f"&offset={offset}" if offset else ""))
    pages.append(pd.read_csv(io.StringIO(text), dtype={"value": str, "token_id": str}))
    if headers.get("X-Has-More") != "true":
        break
    offset = headers.get("X-Next-Offset")
transfers = pd.concat(pages, ignore_index=True)
print(f"transfers: {len(transfers)} rows in {len(pages)} page(s)")
print(f"types: block_number {transfers['block_number'].dtype}, value {transfers['value'].dtype}")

# 2. A question in SQL, answered as NDJSON: what the wallet received per token standard.
sql = f"""SELECT token_standard, count(*) AS transfers, sum(value_f64) AS received
FROM transfers WHERE recipient = '{address}' GROUP BY token_standard ORDER BY token_standard"""
request = urllib.request.Request(
    f"{api}/sql?format=ndjson", data=sql.encode(), headers={**auth, "Content-Type": "text/plain"}, method="POST"
)
with urllib.request.urlopen(request) as res:
    received = pd.DataFrame([json.loads(line) for line in res.read().decode().splitlines()])
for row in received.itertuples():
    print(f"received {row.token_standard}: {row.transfers} transfers, {row.received} in total")
