"""A stream consumer (standard library only): a wallet's transfers from block 0 into the live head
(or up to --end), kept exact through reorgs, resumed after a dropped connection from the last id.
  python3 examples/stream_consumer.py --url http://127.0.0.1:8080 --key "$KEY" --chain eip155-1 --address 0x... [--end 100]
"""
import argparse, http.client, json, sys, time, urllib.error, urllib.request

p = argparse.ArgumentParser()
for flag in ("--url", "--key", "--chain", "--address"):
    p.add_argument(flag, required=True)
p.add_argument("--end", default="latest")
a = p.parse_args()
url = f"{a.url}/{a.chain}/v1/address/{a.address}/transfers?asset_type=native,ft,nft&block_number_start=0&block_number_end={a.end}"
items, last_id, ended = [], "", False  # items: every item so far, none of a block a reorg took away
while not ended:
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {a.key}"}
    if last_id:
        headers["Last-Event-ID"] = last_id
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as res:
            ev = {}
            for line in res:
                line = line.decode().rstrip("\n")
                if line:
                    key, _, value = line.partition(": ")
                    ev[key] = value
                    continue
                last_id = ev.get("id", last_id)
                if ev.get("event") == "item":
                    items.append(json.loads(ev["data"]))
                elif ev.get("event") == "reorg":
                    items = [t for t in items if t["block_number"] <= json.loads(ev["data"])["block_number"]]
                elif ev.get("event") == "error":
                    print(f"server: {ev['data']}", file=sys.stderr)
                ended, ev = ended or ev.get("event") == "end", {}
    except urllib.error.HTTPError as err:
        if err.code < 429:
            sys.exit(f"{err.code} {err.read().decode()}")
    except (OSError, http.client.HTTPException):  # a dropped connection: reset, cut short, timed out
        pass
    if not ended:
        print(f"stream cut: resuming after {last_id or 'the start'}", file=sys.stderr)
        time.sleep(1)
for t in items:
    print(f"holding {t['id']} block {t['block_number']}")
