#!/usr/bin/env bash
# The SigV4 signer against @aws-sdk/client-dynamodb as installed now: the SDK
# signs its four requests afresh (new invocation ids, so new signatures) and
# dynamodb_test must produce the same Authorization for each. Skipped (77)
# without node or tests/dynamodb/node_modules (scripts/setup_node.sh).
# Usage: sigv4_reference_test.sh DYNAMODB_TEST_BINARY
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v node >/dev/null 2>&1 || [[ ! -d "$here/node_modules/@aws-sdk/client-dynamodb" ]]; then
  echo "sigv4_reference_test: skipped: no node or no tests/dynamodb/node_modules (scripts/setup_node.sh)"
  exit 77
fi
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
node "$here/sigv4_reference.mjs" 2>/dev/null >"$out"
PARLEY_SIGV4_VECTORS="$out" "$1" --gtest_filter=SigV4.EqualsReferenceClient
