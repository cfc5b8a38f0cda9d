#!/usr/bin/env bash
# Runs one test file with pytest in a given environment's Python (python/CMakeLists.txt):
#   run_pytest.sh INTERPRETER TEST_FILE [pytest arguments]
set -euo pipefail
interpreter=$1
shift
if [[ ! -x $interpreter ]]; then
  echo "$interpreter is missing: the test's Python environment was not made; run scripts/setup.sh" >&2
  exit 1
fi
exec "$interpreter" -m pytest -q -p no:cacheprovider "$@"
