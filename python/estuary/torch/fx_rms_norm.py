"""FX mode's RMSNorm fusion: RMSNorm written out in ATen ops (transformers' LlamaRMSNorm,
T5's layer norm) becomes torch.ops.estuary.rms_norm, and with the residual Add before it
torch.ops.estuary.add_rms_norm, which run Estuary's kernels (ops.py, kernels.py):

    weight * (x * rsqrt(mean(x^2, -1, keepdim) + eps))       x = a + b optionally

eps is a number, or a 0-d tensor (with dynamic=True a model's eps is a graph input): then
the *_tensor_eps forms of the ops read its value when they run.
"""
import operator

import torch

from . import ops  # noqa: F401  (defines torch.ops.estuary.*)
from .fx_attention import finish_rewrites, fake_value, fresh_fake, is_contiguous_value, same_shape, same_size, shape_of

aten = torch.ops.aten


def _call(node, target):
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target is target


def _single(node):
    return len(node.users) == 1


def _other(node, known):
    a, b = node.args[:2]
    return b if a is known else a if b is known else None


def _normalized(value):
    """(x, eps, the chain's nodes that read x) for value = x * rsqrt(mean(x^2, [-1],
    keepdim) + eps), or None."""
    if not _call(value, aten.mul.Tensor) or not _single(value):
        return None
    for x, rsqrt in (value.args[:2], value.args[1::-1]):
        if not _call(rsqrt, aten.rsqrt.default) or not _single(rsqrt):
            continue
        shifted = rsqrt.args[0]
        if not _call(shifted, aten.add.Tensor) or not _single(shifted) or len(shifted.args) != 2 or shifted.kwargs:
            continue
        for mean, eps in (shifted.args, shifted.args[::-1]):
            if not _call(mean, aten.mean.dim) or not _single(mean) or not _is_eps(eps):
                continue
            dims, keepdim = mean.args[1], mean.args[2] if len(mean.args) > 2 else mean.kwargs.get("keepdim", False)
            square = mean.args[0]
            rank = len(shape_of(x) or ())
            if not keepdim or len(dims) != 1 or dims[0] % max(rank, 1) != rank - 1 or not _single(square):
                continue
            if _call(square, aten.pow.Tensor_Scalar) and square.args[0] is x and square.args[1] == 2:
                return x, eps, {square, value}
            if _call(square, aten.mul.Tensor) and square.args[0] is x and square.args[1] is x:
                return x, eps, {square, value}
    return None


def _is_eps(value):
    if isinstance(value, float):
        return True
    fake = fake_value(value)
    return isinstance(fake, torch.Tensor) and fake.dim() == 0 and fake.is_floating_point()


def _match(root):
    """(x, weight, eps, the chain's readers of x) for root = weight * normalized(x) in either
    order, or None."""
    if not _call(root, aten.mul.Tensor):
        return None
    for normalized, weight in (root.args[:2], root.args[1::-1]):
        found = _normalized(normalized) if isinstance(normalized, torch.fx.Node) else None
        if found is None:
            continue
        x, eps, readers = found
        weight_shape, x_shape = shape_of(weight), shape_of(x)
        fakes = [fake_value(n) for n in (x, weight, root)]
        if not weight_shape or len(weight_shape) != 1 or not x_shape or not same_size(weight_shape[0], x_shape[-1]):
            continue
        if any(f.dtype != torch.float32 for f in fakes) or not is_contiguous_value(root):
            continue  # the kernel takes f32 and writes a contiguous result
        return x, weight, eps, readers
    return None


def fuse_rms_norms(gm):
    """Rewrites every RMSNorm written out in gm; returns (RMSNorms, of which with the Add)."""
    graph = gm.graph
    position = {node: i for i, node in enumerate(graph.nodes)}
    fused = with_add = 0
    for root in list(graph.nodes):
        match = _match(root)
        if match is None:
            continue
        x, weight, eps, readers = match
        with graph.inserting_before(root):
            given = isinstance(eps, torch.fx.Node)
            summed = _residual_sum(x, root, readers, position)
            if summed is not None:
                op = torch.ops.estuary.add_rms_norm_tensor_eps if given else torch.ops.estuary.add_rms_norm
                pair = graph.call_function(op.default, (*summed, weight, eps))
                y = graph.call_function(operator.getitem, (pair, 0))
                total = graph.call_function(operator.getitem, (pair, 1))
                pair.meta["val"] = (fresh_fake(fake_value(root)), fresh_fake(fake_value(x)))
                total.meta["val"] = pair.meta["val"][1]
                x.replace_all_uses_with(total, delete_user_cb=lambda user: user not in readers)
                with_add += 1
            else:
                op = torch.ops.estuary.rms_norm_tensor_eps if given else torch.ops.estuary.rms_norm
                y = graph.call_function(op.default, (x, weight, eps))
        y.meta["val"] = fresh_fake(fake_value(root))
        root.replace_all_uses_with(y)
        fused += 1
    if fused:
        finish_rewrites(gm)
    return fused, with_add


def _residual_sum(x, root, readers, position):
    """(a, b) when x = a + b of one shape and every reader of x outside the RMSNorm comes
    after it (they read the fused op's sum instead), else None."""
    if not _call(x, aten.add.Tensor) or len(x.args) != 2 or x.kwargs:
        return None
    a, b = x.args
    if not all(isinstance(v, torch.fx.Node) for v in (a, b)) or not same_shape(shape_of(a), shape_of(b)) or \
            not same_shape(shape_of(a), shape_of(x)):
        return None
    # Nodes an earlier fusion inserted have no position: taken as before the root.
    return (a, b) if all(position.get(user, -1) > position[root] for user in set(x.users) - readers) else None
