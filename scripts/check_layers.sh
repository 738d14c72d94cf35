#!/usr/bin/env bash
# Fails when a folder of src/ includes a folder that sits below it in the layer
# order of docs/architecture.md: the arrows of the tree run one way, so the
# layout keeps telling the truth about the architecture.
set -euo pipefail
cd "$(dirname "$0")/.."

# Lower layers first. A folder may include itself and any folder before it.
layers=(common protocol auth tenant runtime store metrics net hub events session cluster persist upstream api server)

rank() {
  local i
  for i in "${!layers[@]}"; do
    [[ ${layers[$i]} == "$1" ]] && { echo "$i"; return; }
  done
  echo -1
}

bad=0
for dir in src/*/; do
  folder=$(basename "$dir")
  own=$(rank "$folder")
  if ((own < 0)); then
    echo "layers: src/$folder is not in the layer list of scripts/check_layers.sh"
    bad=1
    continue
  fi
  # Only #include "folder/..." lines name another layer; <...> are libraries.
  while IFS=: read -r file line text; do
    target=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$text")
    [[ $target == "$folder" ]] && continue
    # A unit test beside the code may use tests/support (clients, servers for
    # tests), which is not a layer of the server.
    [[ $target == support && $file == *_test.cc ]] && continue
    r=$(rank "$target")
    if ((r < 0 || r > own)); then
      echo "layers: $file:$line includes $target/, above $folder/ in the layer order"
      bad=1
    fi
  done < <(grep -rnE '^#include "[a-z_]+/' "$dir" --include='*.h' --include='*.cc' || true)
done
if ((bad)); then exit 1; fi
echo "layers: ${#layers[@]} layers, no upward include"
