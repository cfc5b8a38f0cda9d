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

from ._estuary import (EstuaryError, Graph, InputTypeError, InputValueError, Model, NodeContext, ResourceLimitError,
                       UnsupportedOpsError, Value, convert, default_limits, load_plugin, _set_config_dir)


def _shipped_configs():
    # As for the command line, ESTUARY_CONFIG_DIR first; then the copy pip installs beside
    # the package; in a build tree, the source tree's configs/.
    installed = _os.path.join(_os.path.dirname(__file__), "configs")
    if "ESTUARY_CONFIG_DIR" in _os.environ:
        return _os.environ["ESTUARY_CONFIG_DIR"]
    return installed if _os.path.isdir(installed) else "@ESTUARY_SOURCE_CONFIG_DIR@"


_set_config_dir(_shipped_configs())

__all__ = ["EstuaryError", "Graph", "InputTypeError", "InputValueError", "Model", "NodeContext", "ResourceLimitError",
           "UnsupportedOpsError", "Value", "convert", "default_limits", "load_plugin"]
__version__ = "0.1.0"
