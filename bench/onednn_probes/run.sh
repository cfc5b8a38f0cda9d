#!/usr/bin/env bash
# Builds conv_shapes.cpp against Debian's oneDNN 2.x and against oneDNN 3.2 from PyPI
# (onednn-cpu-gomp, downloaded into $WORK), then runs 2.x direct, 3.2 and 2.x with Winograd,
# alternating, ROUNDS times (default 3), on one thread. Prints each run's total.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/estuary_onednn_probes}
ROUNDS=${ROUNDS:-3}
mkdir -p "$WORK"
cd "$WORK"
if [ ! -d v3 ]; then
  python3 -m pip download --no-deps --quiet onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
  for wheel in onednn_*gomp-2023.2.0-*.whl; do python3 -m zipfile -e "$wheel" wheels; done
  mkdir -p v3/lib
  cp -r wheels/onednn_devel_cpu_gomp-2023.2.0.data/data/include v3/
  cp wheels/onednn_cpu_gomp-2023.2.0.data/data/lib/libdnnl.so* v3/lib/
fi
g++ -O2 -std=c++17 "$HERE/conv_shapes.cpp" -ldnnl -o conv_shapes_v2
g++ -O2 -std=c++17 "$HERE/conv_shapes.cpp" -I v3/include -L v3/lib -ldnnl -Wl,-rpath,"$WORK/v3/lib" -o conv_shapes_v3
export OMP_NUM_THREADS=1
for _ in $(seq "$ROUNDS"); do
  echo "2.x direct:   $(./conv_shapes_v2 | tail -1)"
  echo "3.2:          $(./conv_shapes_v3 | tail -1)"
  echo "2.x Winograd: $(./conv_shapes_v2 winograd | tail -1)"
done
