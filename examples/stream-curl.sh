#!/bin/sh
# A wallet's native and ERC-20 transfers as Server-Sent Events: from block 0 into the live head
# (END=latest, the default; stop with Ctrl-C), or up to block END, where the stream ends.
#   BASE=http://127.0.0.1:8080 KEY=<api key> CHAIN=eip155-31337 WALLET=0x... [END=100] sh examples/stream-curl.sh
curl -sS -N --fail-with-body -H 'Accept: text/event-stream' -H "Authorization: Bearer $KEY" \
  "$BASE/$CHAIN/v1/address/$WALLET/transfers?asset_type=native,ft&block_number_start=0&block_number_end=${END:-latest}"
