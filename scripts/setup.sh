#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test Estuary, then configures
# and builds it. Idempotent: a second run installs nothing and rebuilds only what changed.
# Prints how long each stage took.
#
#   scripts/setup.sh                     set up every environment and build into build/
#   BUILD_DIR=out scripts/setup.sh
#   ESTUARY_ENVS="torch" scripts/setup.sh    only these framework environments (python/envs)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}

stage_started=$SECONDS
stage() {
  echo "setup: $1 took $((SECONDS - stage_started)) s"
  stage_started=$SECONDS
}

apt_packages=(g++ cmake ninja-build pkg-config python3-venv
              libprotobuf-dev protobuf-compiler libyaml-cpp-dev libltdl-dev
              libgtest-dev libgmock-dev libdnnl-dev zlib1g-dev ccache)

source "$root/scripts/debian_packages.sh"
install_missing_packages setup "${apt_packages[@]}"
stage "Debian packages"

# Python environments, all made with this machine's python3 (so the module built against
# the base one imports in every one) and remade only when their requirements file changes:
#   .venv           the base: the pybind11 module is built against it, and the tests that
#                   need no framework run in it (python/requirements.txt);
#   .venvs/<name>   one per framework (python/envs/<name>.txt): frameworks pin conflicting
#                   NumPy and protobuf versions, and some crash when imported into one
#                   process together, so each framework's tests run in its own.
make_environment() {
  local dir=$1 requirements=$2
  if [[ ! -x $dir/bin/python ]]; then
    echo "setup: creating $dir"
    python3 -m venv "$dir"
  fi
  local stamp=$dir/.requirements.sha256
  if ! sha256sum --status -c "$stamp" 2>/dev/null; then
    echo "setup: installing $(realpath --relative-to="$root" "$requirements") into $dir"
    "$dir/bin/pip" install -q --disable-pip-version-check -r "$requirements"
    sha256sum "$requirements" > "$stamp"
  fi
}
make_environment "$root/.venv" "$root/python/requirements.txt"
stage "environment .venv"

# The build needs only the base environment, so it runs while the framework environments
# install (mostly downloading and unpacking), and setup waits for both.
source "$root/scripts/compiler_cache.sh"
build() {
  local started=$SECONDS generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  if [[ ! -f $build_dir/CMakeCache.txt ]]; then
    cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DESTUARY_BUILD_PYTHON=ON -DPython_EXECUTABLE="$root/.venv/bin/python" \
      -DESTUARY_PYTHON_ENVS_DIR="$root/.venvs" "${compiler_cache_defines[@]}" \
      -Dpybind11_DIR="$("$root/.venv/bin/python" -m pybind11 --cmakedir)" >/dev/null
  fi
  cmake --build "$build_dir" -j "$(nproc)"
  echo "setup: build took $((SECONDS - started)) s"
}
# Stops the build (cmake, ninja and the compilers under it) when setup fails early.
stop_tree() {
  local child
  for child in $(ps -o pid= --ppid "$1"); do stop_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
build &
build_pid=$!
trap 'stop_tree $build_pid' EXIT

for requirements in "$root"/python/envs/*.txt; do
  name=$(basename "$requirements" .txt)
  if [[ -n ${ESTUARY_ENVS+set} && " $ESTUARY_ENVS " != *" $name "* ]]; then continue; fi
  make_environment "$root/.venvs/$name" "$requirements"
  stage "environment .venvs/$name"
done
wait "$build_pid"
trap - EXIT
