"""FX mode's SiLU-gated MLP fusion: the gating of a SwiGLU MLP (Llama, Mistral, Qwen2:
down(silu(gate(x)) * up(x))) becomes torch.ops.estuary.swiglu, Estuary's SwiGLU kernel,
one pass over the two projections instead of silu's and the product's two:

    silu(a) * b    (either order; a read by nothing else, a and b of one shape, f32, the
                   product contiguous, as the kernel writes it)
"""
import torch

from . import ops  # noqa: F401  (defines torch.ops.estuary.*)
from .fx_attention import fake_value, finish_rewrites, is_contiguous_value, replace_with_call, same_shape, shape_of

aten = torch.ops.aten


def _match(root):
    """(a, b) for root = silu(a) * b, else None."""
    if not (root.op == "call_function" and root.target is aten.mul.Tensor and len(root.args) == 2 and not root.kwargs):
        return None
    for gated, b in (root.args, root.args[::-1]):
        if not (isinstance(gated, torch.fx.Node) and gated.op == "call_function" and gated.target is aten.silu.default
                and len(gated.users) == 1 and isinstance(b, torch.fx.Node)):
            continue
        a = gated.args[0]
        if not same_shape(shape_of(a), shape_of(b)) or not same_shape(shape_of(a), shape_of(root)):
            continue
        if any(fake_value(n).dtype != torch.float32 for n in (a, b, root)) or not is_contiguous_value(root):
            continue
        return a, b
    return None


def fuse_gated_mlps(gm):
    """Rewrites every silu(a) * b in gm; returns how many."""
    graph = gm.graph
    fused = 0
    for root in list(graph.nodes):
        match = _match(root)
        if match is None:
            continue
        replace_with_call(root, torch.ops.estuary.swiglu.default, match)
        fused += 1
    if fused:
        finish_rewrites(gm)
    return fused
