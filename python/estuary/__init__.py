"""Estuary: models from several frameworks, one graph IR, one graph engine.

    import estuary, numpy as np
    model = estuary.Model("resnet50.onnx")        # an .onnx file, an .eom, an IR file or a Graph
    (y,) = model.run({"x": np.ones((1, 3, 224, 224), np.float32)})
    estuary.convert("resnet50.onnx", "resnet50.eom", input_shapes={"x": [1, 3, 224, 224]})
"""
import os as _os

# oneDNN's OpenMP workers spin between parallel regions by default, and on a shared machine a
# spinning worker holds a core its sibling needs (a 60 ms ResNet-50 took 450 ms). libgomp
# reads the policy once, when the extension module loads it, so it is set before the import
# unless the user chose one.
def _openmp_already_loaded():
    try:
        with open("/proc/self/maps") as maps:
            return "libgomp" in maps.read()
    except OSError:
        return False


if "OMP_WAIT_POLICY" not in _os.environ:
    if _openmp_already_loaded():
        import warnings as _warnings

        _warnings.warn("estuary was imported after an OpenMP runtime was loaded (by torch, say), so its "
                       "worker threads spin between operations; import estuary first, or set "
                       "OMP_WAIT_POLICY=passive in the environment, if other work shares the cores")
    _os.environ["OMP_WAIT_POLICY"] = "passive"

from ._estuary import EstuaryError, Graph, Model, UnsupportedOpsError, convert, _set_config_dir


def _shipped_configs():
    # As for the command line, ESTUARY_CONFIG_DIR first; then the copy pip installs beside
    # the package; in a build tree, the source tree's configs/.
    installed = _os.path.join(_os.path.dirname(__file__), "configs")
    if "ESTUARY_CONFIG_DIR" in _os.environ:
        return _os.environ["ESTUARY_CONFIG_DIR"]
    return installed if _os.path.isdir(installed) else "@ESTUARY_SOURCE_CONFIG_DIR@"


_set_config_dir(_shipped_configs())

__all__ = ["EstuaryError", "Graph", "Model", "UnsupportedOpsError", "convert"]
__version__ = "0.1.0"
