"""PyTorch ops for Estuary's fused ops, for register_replacement's replace_fn to call.

In fx mode PyTorch runs them with the implementations below; in graph-engine mode the FX
frontend translates them into Estuary's ops (op_table.cpp), which the GE backend runs with
its fused kernels (e.g. the O2 pipeline turns Add + RMSNormalization into AddRMSNorm).

    torch.ops.estuary.rms_norm(x, gamma, eps) -> y
    torch.ops.estuary.add_rms_norm(x1, x2, gamma, eps) -> (y, x1 + x2)
"""
import torch


@torch.library.custom_op("estuary::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, gamma: torch.Tensor, eps: float) -> torch.Tensor:
    """RMS normalization over the last dim, scaled by gamma."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma


@rms_norm.register_fake
def _(x, gamma, eps):
    return torch.empty_like(x)


@torch.library.custom_op("estuary::add_rms_norm", mutates_args=())
def add_rms_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor,
                 eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The residual sum x1 + x2, RMS-normalized (y), and the sum itself."""
    total = x1 + x2
    return total * torch.rsqrt(total.pow(2).mean(-1, keepdim=True) + eps) * gamma, total


@add_rms_norm.register_fake
def _(x1, x2, gamma, eps):
    return torch.empty_like(x1), torch.empty_like(x1)
