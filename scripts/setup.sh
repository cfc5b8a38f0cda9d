#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test Estuary, then configures
# and builds it. Idempotent: a second run installs nothing and rebuilds only what changed.
#
#   scripts/setup.sh            set up and build into build/
#   BUILD_DIR=out scripts/setup.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}

apt_packages=(g++ cmake ninja-build pkg-config python3-venv
              libprotobuf-dev protobuf-compiler libyaml-cpp-dev libltdl-dev
              libgtest-dev libgmock-dev libdnnl-dev zlib1g-dev)

missing=()
for package in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python virtual environment: the pybind11 module is built against it and the Python
# tests run in it.
venv=$root/.venv
if [[ ! -x $venv/bin/python ]]; then
  echo "setup: creating $venv"
  python3 -m venv "$venv"
fi
requirements=$root/python/requirements.txt
stamp=$venv/.requirements.sha256
if [[ -f $requirements ]] && ! sha256sum --status -c "$stamp" 2>/dev/null; then
  echo "setup: installing $(basename "$requirements") into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
  sha256sum "$requirements" > "$stamp"
fi

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DESTUARY_BUILD_PYTHON=ON -DPython_EXECUTABLE="$venv/bin/python" \
    -Dpybind11_DIR="$("$venv/bin/python" -m pybind11 --cmakedir)" >/dev/null
fi
cmake --build "$build_dir" -j "$(nproc)"
