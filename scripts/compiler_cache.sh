# Sourced by the scripts that configure Estuary's Release builds (setup.sh, wheel.sh), with
# $root set. compiler_cache_defines: the CMake definitions that run every compile through
# ccache when it is installed, with paths under the repository hashed relative to the build
# folder, so that builds in sibling folders (build/, build-wheel/) share every object whose
# compile command is otherwise the same: the wheel then compiles only what its portable -march
# changes (the kernels), not the whole project a second time. The compilers are named the same
# way in every build (ccache hashes the name: c++ and g++ would not share), $CC and $CXX when
# set; pip would otherwise pass the wheel's build the names Python was built with.
compiler_cache_defines=()
if command -v ccache >/dev/null; then
  compiler_cache_defines=(-DCMAKE_C_COMPILER="${CC:-cc}" -DCMAKE_CXX_COMPILER="${CXX:-c++}"
                          -DCMAKE_C_COMPILER_LAUNCHER="env;CCACHE_BASEDIR=$root;ccache"
                          -DCMAKE_CXX_COMPILER_LAUNCHER="env;CCACHE_BASEDIR=$root;ccache")
fi
