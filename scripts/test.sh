#!/usr/bin/env bash
# Runs every test: sets up and builds first (see setup.sh), then the whole ctest suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
ctest --test-dir "$build_dir" -j "$(nproc)" --output-on-failure "$@"
