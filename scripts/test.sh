#!/usr/bin/env bash
# Runs every test: sets up and builds first (see setup.sh), then the whole ctest suite, in
# parallel; each Python test file runs in its framework's environment (python/envs). Extra
# arguments go to ctest: `scripts/test.sh -L torch`, `scripts/test.sh -R Golden`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
started=$SECONDS
"$root/scripts/setup.sh"
setup_seconds=$((SECONDS - started))
started=$SECONDS
status=0
ctest --test-dir "$build_dir" -j "$(nproc)" --output-on-failure "$@" || status=$?
echo "test.sh: setup and build took ${setup_seconds} s, the tests $((SECONDS - started)) s"
exit $status
