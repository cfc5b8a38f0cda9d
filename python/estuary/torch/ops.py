"""PyTorch ops for Estuary's fused ops: what FX mode's fusions insert, and what
register_replacement's replace_fn may call.

Called from PyTorch (FX mode, or eagerly), f32 CPU tensors outside autograd run Estuary's
kernels (kernels.py: the GE backend's RMSNormalization, and AddRMSNorm for the sum and its
normalization in one pass); other tensors run the PyTorch formulas below. In graph-engine
mode the FX frontend translates the ops into Estuary's IR (op_table.cpp) like any other.

    torch.ops.estuary.rms_norm(x, gamma, eps) -> y
    torch.ops.estuary.add_rms_norm(x1, x2, gamma, eps) -> (y, x1 + x2)
"""
import torch

from . import kernels


def _rms_norm(x, gamma, eps):
    if kernels.available(x, gamma):
        return kernels.run("estuary.rms_norm.default", [x, gamma], [eps])[0]
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma


def _add_rms_norm(x1, x2, gamma, eps):
    if kernels.available(x1, x2, gamma) and x1.shape == x2.shape:
        y, total = kernels.run("estuary.add_rms_norm.default", [x1, x2, gamma], [eps], results=2)
        return y, total
    total = x1 + x2
    return total * torch.rsqrt(total.pow(2).mean(-1, keepdim=True) + eps) * gamma, total


@torch.library.custom_op("estuary::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, gamma: torch.Tensor, eps: float) -> torch.Tensor:
    """RMS normalization over the last dim, scaled by gamma."""
    return _rms_norm(x, gamma, eps)


@rms_norm.register_fake
def _(x, gamma, eps):
    return torch.empty_like(x)


@torch.library.custom_op("estuary::add_rms_norm", mutates_args=())
def add_rms_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor,
                 eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The residual sum x1 + x2, RMS-normalized (y), and the sum itself."""
    return _add_rms_norm(x1, x2, gamma, eps)


@add_rms_norm.register_fake
def _(x1, x2, gamma, eps):
    return torch.empty_like(x1), torch.empty_like(x1)


# The same with eps a 0-d tensor, read when the op runs: FX mode's fusion uses these where
# dynamic=True has made a model's eps a graph input (an item() in the graph would stop
# the passes that propagate fake tensors).
@torch.library.custom_op("estuary::rms_norm_tensor_eps", mutates_args=())
def rms_norm_tensor_eps(x: torch.Tensor, gamma: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """rms_norm with eps given as a 0-d tensor."""
    return _rms_norm(x, gamma, float(eps))


@rms_norm_tensor_eps.register_fake
def _(x, gamma, eps):
    return torch.empty_like(x)


@torch.library.custom_op("estuary::add_rms_norm_tensor_eps", mutates_args=())
def add_rms_norm_tensor_eps(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor,
                            eps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """add_rms_norm with eps given as a 0-d tensor."""
    return _add_rms_norm(x1, x2, gamma, float(eps))


@add_rms_norm_tensor_eps.register_fake
def _(x1, x2, gamma, eps):
    return torch.empty_like(x1), torch.empty_like(x1)
