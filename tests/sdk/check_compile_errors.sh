#!/usr/bin/env bash
# check_compile_errors.sh CXX INCLUDE_DIR...: with the typed op classes, an attribute of the
# wrong type does not compile. A correct use compiles (so a failure below is the type's, not
# the setup's), and each wrong one fails naming the setter.
set -euo pipefail
cxx=$1
shift
includes=()
for dir in "$@"; do includes+=(-I "$dir"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

program() {
  cat <<PROGRAM
#include "estuary/sdk/ops.h"
using namespace estuary;
void build(sdk::GraphBuilder& g, sdk::Output x, sdk::Output w) {
  sdk::ops::Conv(g).set_input_X(x).set_input_W(w).$1;
}
PROGRAM
}

compiles() {
  program "$1" >"$work/use.cpp"
  "$cxx" -std=c++17 -fsyntax-only "${includes[@]}" "$work/use.cpp" 2>"$work/errors.txt"
}

compiles 'set_attr_group(2).set_attr_strides({1, 1}).set_attr_auto_pad("SAME_UPPER")' ||
  { cat "$work/errors.txt"; echo "check_compile_errors.sh: a correct use does not compile"; exit 1; }
for wrong in 'set_attr_group(1.5)' 'set_attr_strides("1,1")' 'set_attr_auto_pad(3)' 'set_attr_group(true)' \
             'set_input_X(3)'; do
  if compiles "$wrong"; then
    echo "check_compile_errors.sh: '$wrong' compiled; a wrong type must not"
    exit 1
  fi
  setter=${wrong%%(*}
  grep -q "$setter" "$work/errors.txt" ||
    { cat "$work/errors.txt"; echo "check_compile_errors.sh: the error for '$wrong' does not name $setter"; exit 1; }
done
echo "check_compile_errors.sh: wrong attribute and input types are compile errors"
