"""Estuary: models from several frameworks, one graph IR, one graph engine.

    import estuary, numpy as np
    model = estuary.Model("resnet50.onnx")        # an .onnx file, an .eom, an IR file or a Graph
    (y,) = model.run({"x": np.ones((1, 3, 224, 224), np.float32)})
    estuary.convert("resnet50.onnx", "resnet50.eom", input_shapes={"x": [1, 3, 224, 224]})

A model the frontends cannot translate whole converts with `extensions`: Python functions
that translate its custom ops (docs/frontends.md).
"""
import os as _os

# libgomp's idle workers spin for about a millisecond before they sleep, and on a shared
# machine a spinning worker holds a core its sibling needs (a 60 ms ResNet-50 took 450 ms);
# sleeping at once makes each parallel region cost ~10 us to start. A short spin (~0.1 ms)
# keeps both, as the command line does. libgomp reads its settings when it is loaded, so this
# only takes effect when estuary is imported before torch (whose OpenMP runtime is shared).
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "10000"


def _check_cpu(arch="@ESTUARY_CPU_ARCH@"):
    """A wheel's kernels are compiled for x86-64-v3 (pyproject.toml); on an older CPU they would
    stop the process with an illegal instruction, so it is refused here, saying why."""
    if arch != "x86-64-v3" or not _os.path.exists("/proc/cpuinfo"):
        return
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo if line.startswith("flags")), [])
    missing = [flag for flag in ("avx2", "fma", "bmi2", "f16c", "movbe") if flag not in flags]
    if missing:
        raise ImportError(f"estuary: this build needs an x86-64-v3 CPU (AVX2, FMA); this one lacks {', '.join(missing)}. "
                          "Build Estuary from source on this machine (scripts/setup.sh) to run here.")


_check_cpu()

from ._estuary import (EstuaryError, Graph, InputTypeError, InputValueError, Model, NodeContext, ResourceLimitError,
                       UnsupportedOpsError, Value, convert, default_limits, load_plugin, precision_modes)

__all__ = ["EstuaryError", "Graph", "InputTypeError", "InputValueError", "Model", "NodeContext", "ResourceLimitError",
           "UnsupportedOpsError", "Value", "convert", "default_limits", "load_plugin", "precision_modes"]
__version__ = "0.1.0"
