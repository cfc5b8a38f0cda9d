#!/usr/bin/env bash
# check_install.sh BUILD_DIR CONSUMER_SOURCE_DIR EXAMPLES_DIR PYTHON: see CMakeLists.txt. The
# programs run with no ESTUARY_* variable set, so the plugins and pipelines they find are the
# installed ones. PYTHON (with the onnx package) writes the ONNX model edit_onnx edits.
set -euo pipefail
build_dir=$1 consumer=$2 examples=$3 python=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset ESTUARY_PLUGIN_PATH ESTUARY_CONFIG_DIR
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
libdir=$(cd "$prefix" && dirname "$(find . -name libestuary_core.so -print -quit)")

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$consumer" -B "$work/cmake-build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"
"$work/cmake-build/consumer_c"

PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
export PKG_CONFIG_PATH
read -r -a flags <<<"$(pkg-config --cflags --libs estuary)"
c++ -std=c++17 "$consumer/consumer.cpp" "${flags[@]}" -o "$work/pkg-config-consumer"
"$work/pkg-config-consumer"
cc -std=c11 "$consumer/consumer_c.c" "${flags[@]}" -lm -o "$work/pkg-config-consumer-c"
"$work/pkg-config-consumer-c"

# The C++ examples, from the installed SDK, each checking its outputs against a reference.
cmake -S "$examples" -B "$work/examples-build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/examples-build" >/dev/null
"$work/examples-build/tiny_cnn"
"$work/examples-build/decoder_block"
"$python" "$examples/make_linear_onnx.py" "$work/linear.onnx"
"$work/examples-build/edit_onnx" "$work/linear.onnx"

# The installed command line finds its plugins and shipped pipelines.
help=$("$prefix/bin/estuary" convert --help)
grep -q "its frontend (.*onnx" <<<"$help"
printf 'graph @g(%%x: f32[4]) {\n  %%i = Identity(%%x)\n  %%y = Relu(%%i)\n  return %%y\n}\n' >"$work/g.est"
"$prefix/bin/estuary" optimize "$work/g.est" --pipeline O2 -o "$work/o2.est" --quiet
! grep -q Identity "$work/o2.est"
echo "check_install.sh: installed into a temporary prefix; the C++ and C consumers (find_package and pkg-config) and the examples built and ran"
