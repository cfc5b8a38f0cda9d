#!/usr/bin/env bash
# The main job, end to end on a real model: builds torchvision's ResNet-50 with PyTorch
# (random, seeded weights; nothing downloaded), exports it to ONNX, converts it with
# `estuary convert`, runs it, and prints how closely its outputs agree with ONNX Runtime's
# and both latencies. Sets up and builds first (see setup.sh). Extra arguments go to
# examples/onnx_demo.py (e.g. --model bert_encoder --threads 1). It runs in PyTorch's environment
# (.venvs/torch), which has ONNX Runtime too.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
PYTHONPATH="$build_dir/python" ESTUARY_CLI="$build_dir/bin/estuary" \
  "$root/.venvs/torch/bin/python" "$root/examples/onnx_demo.py" "$@"
