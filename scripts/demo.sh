#!/usr/bin/env bash
# The main job, end to end: optimizes a LLaMA-style decoder block with the O2 pipeline,
# which loads the Add+RMSNorm fusion plugin, and prints the graph before and after and
# what every pass did. Sets up and builds first (see setup.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT
"$build_dir/bin/estuary" optimize "$root/examples/decoder_block.est" --pipeline O2 --print-ir \
  -o "$out_dir/decoder_block.O2.est"
echo
"$build_dir/bin/estuary" inspect "$out_dir/decoder_block.O2.est"
