"""PyTorch through torch.compile: Estuary as a backend.

    import estuary.torch
    compiled = torch.compile(model, backend=estuary.torch.backend(estuary.torch.CompilerConfig(mode="ge")))

Graph-engine mode ("ge") translates each FX graph into Estuary's IR, optimizes it with a pass
pipeline and runs it on the GE backend; ops Estuary lacks run in PyTorch. FX mode ("fx")
optimizes the FX graph in place (npugraph_ex's passes) for PyTorch's kernels to run.
register_replacement adds user fusions to both.
"""
from . import ops  # noqa: F401  (registers torch.ops.estuary.*)
from .backend import backend
from .config import CompilerConfig
from .patterns import clear_replacements, fwd_only, joint_fwd_bwd, register_replacement

__all__ = ["backend", "clear_replacements", "CompilerConfig", "fwd_only", "joint_fwd_bwd", "register_replacement"]
