"""Estuary: models from several frameworks, one graph IR, one graph engine.

    import estuary, numpy as np
    model = estuary.Model("decoder.est")          # an IR file or an estuary.Graph
    (y,) = model.run({"x": np.ones((1, 64), np.float32)})
"""
from ._estuary import EstuaryError, Graph, Model

__all__ = ["EstuaryError", "Graph", "Model"]
__version__ = "0.1.0"
