"""FX mode's rotary embedding fusion: transformers' apply_rotary_pos_emb in ATen ops becomes
torch.ops.estuary.rotary_embedding, Estuary's RotaryEmbedding kernel (one pass over x
instead of seven ops: two slices, neg, cat, two products and a sum).

    x * C + rotate_half(x) * S          rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2])

Where the match proves that both halves of each table are equal, the kernel reads half
tables, computed once per graph and shared by every layer's q and k (the same match as
Estuary's recognize_rotary_embedding pass on the IR):

    C = unsqueeze(cos(cat(f, f, -1)) [* a], 1),   S the same with sin and the same f and a

(tables computed in the graph from duplicated angles f, as transformers' rotary embedding
modules do). Any other tables C and S of one shape, [S, D] or [B or 1, 1, S, D] (a cache
indexed by position, say), are read whole (the kernel's full_tables).
"""
import torch

from . import ops  # noqa: F401  (defines torch.ops.estuary.*)
from .fx_attention import (contiguous, fake_value, finish_rewrites, fresh_fake, replace_with_call, same_shape, same_size,
                           shape_of)

aten = torch.ops.aten
_END = (1 << 63) - 1  # slice's "to the end"


def _call(node, *targets):
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in targets


def _last_axis(dim, rank):
    return dim in (-1, rank - 1)


def _half_slice(node):
    """(x, start, end) for node = x[..., start:end] on the last axis of a rank-4 x, step 1."""
    if not _call(node, aten.slice.Tensor) or node.kwargs:
        return None
    x, dim, start, end, step = (list(node.args) + [0, None, None, 1][len(node.args) - 1:])[:5]
    shape = shape_of(x)
    if not shape or len(shape) != 4 or not _last_axis(dim, 4) or step != 1 or not isinstance(shape[3], int):
        return None
    size = shape[3]
    start = 0 if start is None else start
    end = size if end is None or end >= _END else end
    return x, start, end


def _rotated_half_of(node):
    """x, for node = cat([neg(x[..., D/2:]), x[..., :D/2]], -1), else None."""
    if not _call(node, aten.cat.default) or len(node.args[0]) != 2:
        return None
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    negated, lower = node.args[0]
    if not _last_axis(dim, 4) or not _call(negated, aten.neg.default):
        return None
    upper, lower = _half_slice(negated.args[0]), _half_slice(lower)
    if upper is None or lower is None or upper[0] is not lower[0]:
        return None
    size = shape_of(upper[0])[3]
    if size % 2 or upper[1:] != (size // 2, size) or lower[1:] != (0, size // 2):
        return None
    return upper[0]


def _angles(table, function):
    """(f, scale or None) for table = unsqueeze(function(cat([f, f], -1)) [* scale], 1)."""
    if not _call(table, aten.unsqueeze.default) or table.args[1] not in (1, -3):
        return None
    node, scale = table.args[0], None
    if _call(node, aten.mul.Tensor):
        for value, factor in (node.args[:2], node.args[1::-1]):
            if _is_scalar(factor) and _call(value, function):
                node, scale = value, factor
                break
    if not _call(node, function):
        return None
    doubled = node.args[0]
    if not _call(doubled, aten.cat.default) or len(doubled.args[0]) != 2 or doubled.args[0][0] is not doubled.args[0][1]:
        return None
    f = doubled.args[0][0]
    shape = shape_of(f)
    dim = doubled.args[1] if len(doubled.args) > 1 else doubled.kwargs.get("dim", 0)
    if not shape or len(shape) != 3 or not _last_axis(dim, 3):
        return None
    return f, scale


def _is_scalar(value):
    if isinstance(value, (int, float)):
        return True
    fake = fake_value(value)
    return isinstance(fake, torch.Tensor) and fake.dim() == 0


def _fits_result(x, root):
    """x [B, H, S, D] f32 with a static head size, the sum of x's shape and dtype."""
    xs = shape_of(x)
    if any(fake_value(n).dtype != torch.float32 for n in (x, root)) or len(xs) != 4 or not isinstance(xs[3], int):
        return False
    return same_shape(shape_of(root), xs)


def _fits_angles(x, f):
    """Angles f [B or 1, S, D/2] f32 for x [B, H, S, D]."""
    xs, fs = shape_of(x), shape_of(f)
    if fake_value(f).dtype != torch.float32:
        return False
    batch = same_size(fs[0], xs[0]) or (isinstance(fs[0], int) and fs[0] == 1)
    return batch and same_size(fs[1], xs[2]) and isinstance(fs[2], int) and fs[2] * 2 == xs[3]


def _laid_out_as_kernel_writes(x, root):
    """Whether the kernel's result has root's strides: the kernel writes x's layout when x is
    contiguous or a transposed [B, S, H, D] (ops.py), and root must have x's strides."""
    x, root = fake_value(x), fake_value(root)
    order = (0, 2, 1, 3)
    heads_inner = contiguous([x.shape[d] for d in order], [x.stride(d) for d in order])
    return (contiguous(x.shape, x.stride()) or heads_inner) and all(map(same_size, x.stride(), root.stride()))


def _same_scalar(a, b):
    """Whether a and b are the same number: equal numbers, one node, or nodes computing the same
    from the same (a model's float converted once for cos and once for sin)."""
    if not isinstance(a, torch.fx.Node) or not isinstance(b, torch.fx.Node):
        return a == b and type(a) is type(b)
    if a is b:
        return True
    return (a.op == b.op == "call_function" and a.target is b.target and a.kwargs == b.kwargs
            and len(a.args) == len(b.args) and all(map(_same_scalar, a.args, b.args)))


def _whole_tables(x, cos, sin):
    """Whether cos and sin are tables the kernel can read whole for x [B, H, S, D]: f32, one
    shape, [S, D] or [B or 1, 1, S, D]."""
    xs, cs = shape_of(x), shape_of(cos)
    if not cs or not same_shape(cs, shape_of(sin)):
        return False
    if any(fake_value(n).dtype != torch.float32 for n in (cos, sin)):
        return False
    if len(cs) == 4 and same_size(cs[1], 1) and (same_size(cs[0], xs[0]) or same_size(cs[0], 1)):
        cs = cs[2:]
    return len(cs) == 2 and same_size(cs[0], xs[2]) and same_size(cs[1], xs[3])


def _match(root):
    """(x, key, tables) for root = x * C + rotate_half(x) * S, else None: tables(graph) makes
    the kernel's cos and sin tables, the same for every match with the same key."""
    if not _call(root, aten.add.Tensor) or len(root.args) != 2 or root.kwargs:
        return None
    for direct, rotated in (root.args, root.args[::-1]):
        if not _call(direct, aten.mul.Tensor) or not _call(rotated, aten.mul.Tensor):
            continue
        for x, cos in (direct.args[:2], direct.args[1::-1]):
            for half, sin in (rotated.args[:2], rotated.args[1::-1]):
                if _rotated_half_of(half) is not x:
                    continue
                if not _laid_out_as_kernel_writes(x, root) or not _fits_result(x, root):
                    continue
                c, s = _angles(cos, aten.cos.default), _angles(sin, aten.sin.default)
                if c is not None and s is not None and c[0] is s[0] and _same_scalar(c[1], s[1]) and \
                        _fits_angles(x, c[0]):
                    f, cos_scale, sin_scale = c[0], c[1], s[1]
                    return x, (f, cos_scale, sin_scale), lambda graph: [
                        _half_table(graph, function, f, scale)
                        for function, scale in ((aten.cos.default, cos_scale), (aten.sin.default, sin_scale))]
                if _whole_tables(x, cos, sin):
                    return x, (cos, sin), lambda graph: [_three_d(graph, table) for table in (cos, sin)]
    return None


def fuse_rotary_embeddings(gm):
    """Rewrites every rotary embedding in gm; returns how many."""
    graph = gm.graph
    tables = {}  # key -> the kernel's (cos, sin)
    fused = 0
    for root in list(graph.nodes):
        match = _match(root)
        if match is None:
            continue
        x, key, make_tables = match
        with graph.inserting_before(root):
            # Made before the first rotary that reads them (which comes after what they are
            # made of), so before every later one too.
            if key not in tables:
                tables[key] = make_tables(graph)
        replace_with_call(root, torch.ops.estuary.rotary_embedding.default, (x, *tables[key]))
        fused += 1
    if fused:
        finish_rewrites(gm)
    return fused


def _three_d(graph, table):
    """table [S, D] or [B or 1, 1, S, D] as the kernel's [B or 1, S, D] (a view)."""
    fake = fake_value(table)
    if fake.dim() == 2:
        view = graph.call_function(aten.unsqueeze.default, (table, 0))
        with fake.fake_mode:
            view.meta["val"] = fake.unsqueeze(0)
    else:
        view = graph.call_function(aten.squeeze.dim, (table, 1))
        with fake.fake_mode:
            view.meta["val"] = fake.squeeze(1)
    return view


def _half_table(graph, function, f, scale):
    half = graph.call_function(function, (f,))
    half.meta["val"] = fresh_fake(fake_value(f))
    if scale is None:
        return half
    scaled = graph.call_function(aten.mul.Tensor, (half, scale))
    scaled.meta["val"] = fresh_fake(fake_value(f))
    return scaled
