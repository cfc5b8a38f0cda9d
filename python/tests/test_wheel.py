"""The wheel as a user installs it: scripts/wheel.sh builds and repairs it, a fresh virtual
environment installs it, and there the `estuary` command converts an ONNX model and
`estuary.Model` runs it. Nothing of the build tree or of Debian's libraries may be used: every
shared library of the package resolves inside the package or to the C and C++ runtimes."""
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
# What a manylinux wheel may take from the system: the C and C++ runtimes and zlib, which the
# manylinux policies list (Debian marks zlib1g required: it is on every installation).
SYSTEM_RUNTIMES = re.compile(r"^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libz|ld-linux-x86-64|linux-vdso)\.")


def clean_environment():
    """The variables a user's shell has, none pointing at this repository."""
    return {key: value for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV") and not key.startswith("ESTUARY_")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run([str(ROOT / "scripts/wheel.sh"), str(work / "dist")], check=True, timeout=3600)
    wheels = list((work / "dist").glob("estuary-*.whl"))
    assert len(wheels) == 1, wheels
    venv = work / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True, env=clean_environment())
    subprocess.run([str(venv / "bin/pip"), "install", "-q", "--disable-pip-version-check", str(wheels[0])],
                   check=True, env=clean_environment(), timeout=900)
    return venv


def test_the_wheel_is_repaired_for_this_platform(installed):
    site = next((installed / "lib").glob("python3*/site-packages"))
    assert (site / "estuary/bin/estuary").exists()
    assert list((site / "estuary/lib/estuary/plugins").glob("libestuary_onnx_frontend*.so"))
    assert (site / "estuary/share/estuary/configs/O2.yaml").exists()
    # The package's ELF files and the libraries auditwheel copied in beside it.
    elves = [path for folder in ("estuary", "estuary.libs") for path in (site / folder).rglob("*")
             if path.is_file() and (path.suffix == ".so" or ".so." in path.name or path.name == "estuary")]
    assert len(elves) > 10
    for elf in elves:
        listing = subprocess.run(["ldd", str(elf)], capture_output=True, text=True, env=clean_environment()).stdout
        for line in listing.splitlines():
            name = line.strip().split()[0]
            assert "not found" not in line, f"{elf.relative_to(site)}: {line.strip()}"
            if "=>" in line and not SYSTEM_RUNTIMES.match(name):
                path = line.split("=>")[1].split("(")[0].strip()
                assert path.startswith(str(site)), f"{elf.relative_to(site)} loads {name} from {path}, not the wheel"
            assert str(ROOT) not in line, f"{elf.relative_to(site)} refers to the build tree: {line.strip()}"


def test_the_installed_command_and_package_convert_and_run_a_model(installed, tmp_path):
    weights = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["y"])], "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(weights, "W")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "linear.onnx")

    converted = subprocess.run([str(installed / "bin/estuary"), "convert", "linear.onnx", "-o", "linear.eom",
                                "--input-shape", "x:1~4,8"],
                               cwd=tmp_path, capture_output=True, text=True, env=clean_environment())
    assert converted.returncode == 0, converted.stderr
    assert "converted linear.onnx -> linear.eom" in converted.stdout

    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(3, 8)
    np.save(tmp_path / "x.npy", x)
    script = ("import estuary, numpy as np\n"
              "assert 'site-packages' in estuary.__file__, estuary.__file__\n"
              "model = estuary.Model('linear.eom')\n"
              "np.save('from_eom.npy', model.run({'x': np.load('x.npy')})[0])\n"
              "np.save('from_onnx.npy', estuary.convert('linear.onnx').run({'x': np.load('x.npy')})[0])\n")
    ran = subprocess.run([str(installed / "bin/python"), "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         env=clean_environment())
    assert ran.returncode == 0, ran.stderr
    expected = np.maximum(x @ weights, 0)
    np.testing.assert_allclose(np.load(tmp_path / "from_eom.npy"), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.load(tmp_path / "from_onnx.npy"), expected, rtol=1e-5, atol=1e-6)
