"""PyTorch ops for Estuary's fused ops: what FX mode's fusions insert, and what
register_replacement's replace_fn may call.

Called from PyTorch (FX mode, or eagerly), f32 CPU tensors outside autograd run Estuary's
kernels (kernels.py: the GE backend's RMSNormalization, AddRMSNorm for the sum and its
normalization in one pass, RotaryEmbedding, SwiGLU); other tensors run the PyTorch formulas
below. In graph-engine mode the FX frontend translates the ops into Estuary's IR
(op_table.cpp) like any other.

    torch.ops.estuary.rms_norm(x, gamma, eps) -> y
    torch.ops.estuary.add_rms_norm(x1, x2, gamma, eps) -> (y, x1 + x2)
    torch.ops.estuary.rotary_embedding(x, cos, sin) -> x * cos + rotate_half(x) * sin
        x [B, H, S, D]; cos and sin [B or 1, S, D], or [B or 1, S, D/2] for tables whose
        two halves are equal (then one half): Estuary's RotaryEmbedding, non-interleaved
        (full_tables for whole tables). The result is laid out as x is when x is contiguous
        or a transposed [B, S, H, D] (a projection's q or k), contiguous otherwise.
    torch.ops.estuary.swiglu(a, b) -> silu(a) * b    (a SiLU-gated MLP's gating)

FX mode's graphs call the _Fused records below directly (fx_lowering.py), or the C++ kernel
callable one of them chooses for the node's fake values.
"""
import torch

from . import kernels
from .fx_attention import contiguous, reinterpret, same_shape, same_size


def _same_shape(a, b):
    """Whether tensors a and b (or fake ones with symbolic sizes) provably have one shape."""
    return same_shape(tuple(a.shape), tuple(b.shape))


class _Fused:
    """A fused op: its Estuary target, how many leading arguments are tensors (the rest are
    constants of a build: numbers, or 0-d tensors read when the op runs), its results, which
    tensors Estuary's kernel takes beyond f32 on the CPU (`fits`, on real or fake tensors), and
    the PyTorch formula for the others."""

    def __init__(self, target, tensors, fits, formula, results=1):
        self.target, self.tensors, self.fits, self.formula, self.results = target, tensors, fits, formula, results
        self.__module__, self.__name__ = "estuary", target.split(".")[1]  # FX's code calls it estuary_<op>

    def takes(self, tensors):
        """Whether Estuary's kernels take tensors like these (real or fake)."""
        return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors) and self.fits(*tensors)

    def kernel(self, tensors):
        """Estuary's kernel for tensors like these (real or fake, outside autograd: the kernels
        have no backward), called with the op's arguments; None where the formula has to run."""
        if not self.takes(tensors):
            return None
        return kernels.op(self.target, tuple(t.dtype for t in tensors), tuple(t.dim() for t in tensors), self.results)

    def __call__(self, *args):
        tensors = args[:self.tensors]
        differentiating = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
        kernel = None if differentiating else self.kernel(tensors)
        return self.formula(*args) if kernel is None else kernel(*args)


def _rms_norm_formula(x, gamma, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma


def _add_rms_norm_formula(x1, x2, gamma, eps):
    total = x1 + x2
    return _rms_norm_formula(total, gamma, eps), total


def _rotary_embedding_formula(x, cos, sin):
    if cos.shape[-1] != x.shape[-1]:  # half tables
        cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


def _swiglu_formula(a, b):
    return torch.nn.functional.silu(a) * b


_rms_norm = _Fused("estuary.rms_norm.default", 2, lambda x, gamma: gamma.dim() == 1, _rms_norm_formula)
_add_rms_norm = _Fused("estuary.add_rms_norm.default", 3,
                       lambda x1, x2, gamma: _same_shape(x1, x2) and gamma.dim() == 1, _add_rms_norm_formula, results=2)


class _RotaryEmbedding(_Fused):
    """The kernel reads x [B, H, S, D] contiguous, or x laid out as [B, S, H, D] (a q or k
    transposed from its projection) as [B, S, H*D] with num_heads, and writes the result in
    x's layout, without copying x; tables of D values per position are read whole."""

    def kernel(self, tensors):
        x, cos = tensors[0], tensors[1]
        if not self.takes(tensors):
            return None
        whole = int(same_size(cos.shape[-1], x.shape[-1]))
        if contiguous(x.shape, x.stride()):
            return kernels.op(self.target, (x.dtype,) * 3, (4, 3, 3), fixed=(0, whole))
        if not contiguous(*_heads_inner(x)):
            return None
        return _HeadsInner(kernels.op(self.target, (x.dtype,) * 3, (3, 3, 3), fixed=(whole,)))


def _heads_inner(x):
    """x's [B, S, H, D] shape and strides (dims 1 and 2 swapped)."""
    order = (0, 2, 1, 3)
    return [x.shape[d] for d in order], [x.stride(d) for d in order]


class _HeadsInner:
    """The rotary kernel on x [B, H, S, D] laid out as [B, S, H, D], read as [B, S, H*D]."""

    __module__, __name__ = "estuary", "rotary_embedding_heads_inner"  # FX's code names the call after these

    def __init__(self, flat):
        self.flat = flat

    def __call__(self, x, cos, sin):
        batch, heads, length, size = x.shape
        row = heads * size
        if x.stride() != (length * row, size, row, 1):  # not laid out as the graph's values said
            x = x.transpose(1, 2).contiguous().transpose(1, 2)
        # Views made by reinterpreting memory: through the view ops, the four cost more than the kernel.
        y = self.flat(reinterpret(x, (batch, length, row), (length * row, row, 1), 0), cos, sin, heads)
        return reinterpret(y, (batch, heads, length, size), (length * row, size, row, 1), 0)


_rotary_embedding = _RotaryEmbedding("estuary.rotary_embedding.default", 3,
                                     lambda x, cos, sin: x.dim() == 4 and cos.dim() == 3 and _same_shape(cos, sin),
                                     _rotary_embedding_formula)
_swiglu = _Fused("estuary.swiglu.default", 2, _same_shape, _swiglu_formula)


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
    return _rms_norm(x, gamma, eps)


@rms_norm_tensor_eps.register_fake
def _(x, gamma, eps):
    return torch.empty_like(x)


@torch.library.custom_op("estuary::add_rms_norm_tensor_eps", mutates_args=())
def add_rms_norm_tensor_eps(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor,
                            eps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """add_rms_norm with eps given as a 0-d tensor."""
    return _add_rms_norm(x1, x2, gamma, eps)


@add_rms_norm_tensor_eps.register_fake
def _(x1, x2, gamma, eps):
    return torch.empty_like(x1), torch.empty_like(x1)


@torch.library.custom_op("estuary::rotary_embedding", mutates_args=())
def rotary_embedding(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x * cos + rotate_half(x) * sin for x [B, H, S, D] and half tables cos, sin [B or 1, S, D/2]."""
    return _rotary_embedding(x, cos, sin)


@rotary_embedding.register_fake
def _(x, cos, sin):
    return torch.empty_like(x)


@torch.library.custom_op("estuary::swiglu", mutates_args=())
def swiglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """silu(a) * b."""
    return _swiglu(a, b)


@swiglu.register_fake
def _(a, b):
    return torch.empty_like(a, memory_format=torch.contiguous_format)


# What the ops above run: FX mode's final graph calls these directly (fx_lowering.py), without
# the dispatcher's custom-op layers (about 14 us a call).
FUSED = {
    torch.ops.estuary.rms_norm.default: _rms_norm,
    torch.ops.estuary.add_rms_norm.default: _add_rms_norm,
    torch.ops.estuary.rms_norm_tensor_eps.default: _rms_norm,
    torch.ops.estuary.add_rms_norm_tensor_eps.default: _add_rms_norm,
    torch.ops.estuary.rotary_embedding.default: _rotary_embedding,
    torch.ops.estuary.swiglu.default: _swiglu,
}
