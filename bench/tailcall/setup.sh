#!/usr/bin/env bash
# npm run bench:tailcall:setup: install the Tailcall peer here (once; one package holding one
# binary, kept out of the project's npm ci). Tailcall 1.0.0 is the newest that starts on glibc 2.36
# (1.6.x needs 2.38). A platform it cannot be installed or run on is not an error: the bench then
# skips the Tailcall rows with a one-line note, and so does this script.
set -uo pipefail
cd "$(dirname "$0")"

BIN=node_modules/@tailcallhq/core-linux-x64-gnu/bin/tailcall
if [ ! -x "$BIN" ]; then
  if ! out=$(npm install --no-audit --no-fund --loglevel=error 2>&1); then
    echo "bench/tailcall: not installed, the Tailcall rows will be skipped: $(printf '%s\n' "$out" | grep -m1 -E 'ERR|error' || printf '%s\n' "$out" | head -n1)"
    exit 0
  fi
fi
# TC_TRACKER=false: no usage tracking; HOME in a scratch folder: nothing written to the user's home.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if ! version=$(TC_TRACKER=false HOME="$scratch" XDG_CACHE_HOME="$scratch" "$BIN" --version 2>&1); then
  echo "bench/tailcall: installed but does not start here, the Tailcall rows will be skipped: $(printf '%s\n' "$version" | head -n1)"
  exit 0
fi
echo "bench/tailcall: $version"
