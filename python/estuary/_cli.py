"""The `estuary` console script of the wheel: runs the command line installed in the package
(estuary/bin/estuary), which finds its libraries, plugins and pipelines beside it."""
import os
import sys


def main():
    # Importing this module imported the package, which refuses a CPU the wheel's kernels
    # cannot run on (estuary/__init__.py) before the command line would start.
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "estuary")
    if not os.access(binary, os.X_OK):
        sys.exit(f"estuary: the command line is not installed at {binary}; this package was not built as a wheel "
                 "(use build/bin/estuary in a build tree)")
    os.execv(binary, [binary] + sys.argv[1:])
