"""PyTorch through torch.compile: Estuary as a backend.

    import estuary.torch
    compiled = torch.compile(model, backend=estuary.torch.backend(estuary.torch.CompilerConfig(mode="ge")))

Graph-engine mode ("ge") translates each FX graph into Estuary's IR, optimizes it with a pass
pipeline and runs it on the GE backend; ops Estuary lacks run in PyTorch.
"""
from .backend import backend
from .config import CompilerConfig

__all__ = ["backend", "CompilerConfig"]
