#!/bin/sh
# Makes a webhook: every native and ERC-20 transfer of a wallet, from block 0 into the live head,
# POSTed in signed batches to a receiver (hook-receiver.mjs or hook_receiver.py) once 2 blocks deep.
#   BASE=http://127.0.0.1:8080 KEY=<api key> CHAIN=eip155-31337 WALLET=0x... \
#   RECEIVER=http://127.0.0.1:9000/ SECRET=<16 characters or more> sh examples/hook-create.sh
# The server must allow the receiver's host: serve --hook-allow-hosts public,127.0.0.1 for this one.
curl -sS --fail-with-body -X POST "$BASE/$CHAIN/v1/hooks" \
  -H "Authorization: Bearer $KEY" -H "content-type: application/json" \
  -d "{\"path\": \"/$CHAIN/v1/address/$WALLET/transfers\", \"query\": {\"asset_type\": \"native,ft\"},
       \"url\": \"$RECEIVER\", \"secret\": \"$SECRET\", \"confirmations\": 2}"
