"""Running code in a framework's own environment (python/envs/README.md).

A test runs in one environment; when it needs something another framework makes (an ONNX
test comparing with models PyTorch exports, a frontend test with references TensorFlow
computes), it runs a script in that framework's environment:

    directory = environments.made("torch", EXAMPLES / "models.py", "resnet50")

runs `.venvs/torch/bin/python models.py DIRECTORY resnet50` once and returns DIRECTORY,
which stays cached between runs: its name is a hash of the script, the files it reads
(`key_files`), its arguments and the environment's requirements, so a change to any of
them makes it anew.
"""
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENVIRONMENTS = pathlib.Path(os.environ.get("ESTUARY_PYTHON_ENVS", ROOT / ".venvs"))
CACHE = pathlib.Path(os.environ.get("ESTUARY_TEST_CACHE", ROOT / "build" / "test_cache"))


def interpreter(name):
    """The Python of environment `name`; an error saying how to make it when it is missing."""
    python = ENVIRONMENTS / name / "bin" / "python"
    if not python.exists():
        raise RuntimeError(f"the Python environment '{name}' ({python.parent.parent}) is missing: "
                           f"run scripts/setup.sh (python/envs/{name}.txt lists what it holds)")
    return str(python)


def run(name, script, *args, timeout=1800):
    """Runs `script` with `args` in environment `name`; returns its stdout, raises with its
    stderr when it fails."""
    result = subprocess.run([interpreter(name), str(script), *map(str, args)], capture_output=True, text=True,
                            timeout=timeout, env=dict(os.environ, PYTHONHASHSEED="0"))
    if result.returncode != 0:
        raise RuntimeError(f"{script} in environment '{name}' failed (exit {result.returncode}):\n"
                           f"{result.stderr[-4000:]}")
    return result.stdout


def made(name, script, *args, key_files=()):
    """The directory `script DIRECTORY *args`, run in environment `name`, filled: made once
    and kept for later runs (see the module's docstring)."""
    digest = hashlib.sha256()
    requirements = ROOT / "python" / "envs" / f"{name}.txt"
    for path in (script, requirements, *key_files):
        digest.update(pathlib.Path(path).read_bytes())
    digest.update("\0".join(map(str, args)).encode())
    directory = CACHE / f"{pathlib.Path(script).stem}-{digest.hexdigest()[:16]}"
    done = directory / ".complete"
    if not done.exists():
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        run(name, script, directory, *args)
        done.touch()
    return directory


if __name__ == "__main__":
    sys.exit("environments.py is a helper for the tests; see its docstring")
