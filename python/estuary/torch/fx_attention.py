"""FX mode's attention fusion: attention written out in ATen ops becomes one
aten.scaled_dot_product_attention (PyTorch's flash kernel on the CPU), which reads the
scores block by block instead of materializing them.

The match is structural, like Estuary's recognize_attention pass on the IR, because the
ATen graph of real attention code varies more than exact traced patterns can follow
(matmul's decomposition into expand/clone/view/bmm, the scale as a graph input with
dynamic=True, repeat_kv's copies):

    _softmax(q K^T * s [+ mask]..., -1) V
                                          with q K^T and P V as (flattened) bmm or matmul,
                                          K^T a transpose of K's last two dims,
                                          s a number or a 0-d tensor (then q is scaled first),
                                          K and V optionally repeat_kv copies (read un-repeated
                                          with enable_gqa), the masks of the scores' dtype
                                          (their sum is SDPA's attn_mask: T5 adds a position
                                          bias and its mask).
"""
import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.multiprocessing.reductions import StorageWeakRef

aten = torch.ops.aten
# A view made from a tensor's memory, sizes, strides and offset increment, without the view
# ops' dispatcher layers: what inductor's generated code calls.
reinterpret = torch._C._dynamo.guards._reinterpret_tensor
_PASS_THROUGH = {aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.expand.default,
                 aten.clone.default, aten.alias.default}
_BATCHED = {aten.bmm.default, aten.matmul.default}
RESHAPES = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}


def fake_value(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def storage_of(node):
    """The storage node's FX value lives in (views share their base's), or None."""
    value = fake_value(node)
    return StorageWeakRef(value.untyped_storage()) if isinstance(value, torch.Tensor) else None


def finish_rewrites(gm):
    """After a fusion replaced nodes: the replaced ones dropped, the graph checked, the code
    regenerated."""
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()


def is_view(node):
    """Whether node's op returns a view of its input."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return False
    returns = target._schema.returns
    return bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write


def contiguous(shape, strides):
    """Whether sizes `shape` with `strides` (ints or symbolic) are provably row-major dense;
    the strides of size-1 dims do not count, as in Tensor.is_contiguous."""
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if same_size(size, 1):
            continue
        if not same_size(stride, expected):
            return False
        expected = expected * size
    return True


def is_contiguous_value(node):
    """Whether node's value is provably contiguous (Estuary's kernels write contiguous results)."""
    value = fake_value(node)
    return isinstance(value, torch.Tensor) and contiguous(value.shape, value.stride())


def replace_with_call(root, target, args):
    """Puts target(*args) in root's place (before it, taking its uses and a meta value like
    its own); returns the new node."""
    with root.graph.inserting_before(root):
        node = root.graph.call_function(target, tuple(args))
    node.meta["val"] = fresh_fake(fake_value(root))
    root.replace_all_uses_with(node)
    return node


def fresh_fake(like):
    """A fake tensor like `like` with storage of its own: the meta value of a new node, which
    reinplacing reads to tell which values alias."""
    with like.fake_mode:
        return torch.empty_strided(like.shape, like.stride(), dtype=like.dtype)


def same_size(a, b):
    return a == b if isinstance(a, int) and isinstance(b, int) else statically_known_true(a == b)


def same_shape(a, b):
    """Whether shapes a and b (tuples of ints or symbolic sizes, or None) are provably one."""
    return a is not None and b is not None and len(a) == len(b) and all(map(same_size, a, b))


def shape_of(node):
    value = fake_value(node)
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None


def _through_views(node):
    """The node below views, expands and clones, with the nodes passed."""
    passed = []
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in _PASS_THROUGH:
        passed.append(node)
        node = node.args[0]
    return node, passed


def _stands_for(four, outer):
    """Whether 4-D shape `four` [B, H, X, Y] holds what `outer` does: the same shape, or
    [B*H, X, Y]."""
    if not four or len(four) != 4 or not outer:
        return False
    if len(outer) == 4:
        return all(same_size(a, b) for a, b in zip(outer, four))
    return len(outer) == 3 and same_size(outer[0], four[0] * four[1]) and same_size(outer[1], four[2]) and \
        same_size(outer[2], four[3])


def four_d_operand(node):
    """The [B, H, X, Y] value a batched-matmul operand was made from by views, expands and
    clones: the deepest node of that chain holding the operand's elements in its shape (an
    expand that repeats elements changes the shape, so it ends the elements' identity)."""
    outer = shape_of(node)
    found = node if outer and len(outer) == 4 else None
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in _PASS_THROUGH:
        node = node.args[0]
        if _stands_for(shape_of(node), outer):
            found = node
    return found


def _key(kt):
    """K from the right operand of q K^T: a transpose of K's last two dims."""
    transposed = four_d_operand(kt)
    if transposed is None or transposed.op != "call_function":
        return None
    if transposed.target is aten.transpose.int and sorted(d % 4 for d in transposed.args[1:3]) == [2, 3]:
        return transposed.args[0]
    if transposed.target is aten.permute.default and [d % 4 for d in transposed.args[1]] == [0, 1, 3, 2]:
        return transposed.args[0]
    return None


def _unrepeated(node):
    """K or V [B, Hkv, T, D] that repeat_kv copied to [B, Hkv*n, T, D], or None."""
    base, passed = _through_views(node)
    expands = [n for n in passed if n.target is aten.expand.default]
    while base.op == "call_function" and base.target is aten.slice.Tensor and \
            shape_of(base) == shape_of(base.args[0]):
        base = base.args[0]
    if len(expands) != 1 or base.op != "call_function" or base.target is not aten.unsqueeze.default or \
            base.args[1] % 5 != 2:
        return None
    source = base.args[0]
    shape, expanded = shape_of(source), shape_of(expands[0])
    if not shape or len(shape) != 4 or len(expanded) != 5:
        return None
    return source if all(same_size(shape[i], expanded[j]) for i, j in ((0, 0), (1, 1), (2, 3), (3, 4))) else None


class _Match:
    def __init__(self):
        self.q = self.k = self.v = None
        self.masks = []          # additive masks, summed into SDPA's attn_mask
        self.scale = 1.0         # a number, or a 0-d tensor node
        self.divide = False      # the scores are divided by scale
        self.result = None       # the [B, H, S, Dv] node Y replaces


def _match_scores(node, match):
    """q K^T [* or / scale]: fills q, k, scale; False if it is something else."""
    if node.op == "call_function" and node.target in (aten.mul.Tensor, aten.div.Tensor, aten.mul.Scalar,
                                                      aten.div.Scalar) and len(node.users) == 1:
        scores, factor = node.args[0], node.args[1]
        if node.target in (aten.mul.Tensor, aten.mul.Scalar) and not _is_scale(factor):
            scores, factor = factor, scores
        if not _is_scale(factor):
            return False
        match.scale, match.divide = factor, node.target in (aten.div.Tensor, aten.div.Scalar)
        node = scores
    bmm, _ = _through_views(node)
    if bmm.op != "call_function" or bmm.target not in _BATCHED:
        return False
    match.q, match.k = four_d_operand(bmm.args[0]), _key(bmm.args[1])
    return match.q is not None and match.k is not None


def _is_scale(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0
    shape = shape_of(value)
    return shape == () and fake_value(value).is_floating_point()


def _match_values(softmax, match):
    """P V after the softmax: fills v and result."""
    node = softmax
    while len(node.users) == 1:
        user = next(iter(node.users))
        if user.op == "call_function" and user.target in _BATCHED and user.args[0] is node:
            match.v = four_d_operand(user.args[1])
            result = user
            if len(shape_of(user)) == 3:
                if len(user.users) != 1:
                    return False
                result = next(iter(user.users))
                if result.target not in RESHAPES or len(shape_of(result)) != 4:
                    return False
            match.result = result
            return match.v is not None
        if user.op != "call_function" or user.target not in _PASS_THROUGH or user.args[0] is not node:
            return False
        node = user
    return False


def _four_d_equal(result, match):
    y, q, v = shape_of(result), shape_of(match.q), shape_of(match.v)
    return len(y) == 4 and all(same_size(a, b) for a, b in zip(y, (q[0], q[1], q[2], v[3])))


def _fits_as_mask(mask, logits):
    """An additive mask: of the scores' dtype (a bool tensor added to the scores adds 1.0
    where True, which SDPA's bool masks do not mean)."""
    value = fake_value(mask)
    return isinstance(value, torch.Tensor) and value.dtype == fake_value(logits).dtype


_MOST_MASKS = 4


def _match_masked_scores(logits, match, scores_shape):
    """logits = scores + mask + ...: the scores under additions of masks (T5 adds a position
    bias, then its causal or padding mask), each sum read once; fills match.masks."""
    if _match_scores(logits, match):
        return True
    if not (logits.op == "call_function" and logits.target is aten.add.Tensor and len(logits.users) == 1
            and len(logits.args) == 2 and not logits.kwargs) or len(match.masks) >= _MOST_MASKS:
        return False
    for inner, mask in (logits.args, logits.args[::-1]):
        inner_shape = shape_of(inner)
        if not isinstance(inner, torch.fx.Node) or not _fits_as_mask(mask, logits) or inner_shape is None or \
                len(inner_shape) != 4 or not all(map(same_size, inner_shape, scores_shape)):
            continue
        match.masks.append(mask)
        if _match_masked_scores(inner, match, scores_shape):
            return True
        match.masks.pop()
    return False


def _match(softmax):
    if softmax.op != "call_function" or softmax.target is not aten._softmax.default:
        return None
    logits, dim = softmax.args[0], softmax.args[1]
    shape = shape_of(logits)
    if not shape or len(shape) != 4 or dim % 4 != 3 or softmax.args[2]:
        return None
    match = _Match()
    if not _match_values(softmax, match):
        return None
    return match if _match_masked_scores(logits, match, shape) and _four_d_equal(match.result, match) else None


def fuse_attention(gm):
    """Rewrites every attention written out in gm; returns how many."""
    graph = gm.graph
    matches = [m for m in (_match(node) for node in list(graph.nodes)) if m is not None]
    for match in matches:
        key, value = match.k, match.v
        gqa = False
        unrepeated_key, unrepeated_value = _unrepeated(key), _unrepeated(value)
        if unrepeated_key is not None and unrepeated_value is not None and \
                same_size(shape_of(unrepeated_key)[1], shape_of(unrepeated_value)[1]):
            key, value, gqa = unrepeated_key, unrepeated_value, True
        with graph.inserting_before(match.result):
            query, scale = match.q, match.scale
            if isinstance(scale, torch.fx.Node):
                # A scale known only at run time scales q: SDPA takes its scale as a number.
                query = graph.call_function(aten.div.Tensor if match.divide else aten.mul.Tensor, (query, scale))
                query.meta["val"] = fresh_fake(fake_value(match.q))
                scale = 1.0
            elif match.divide:
                scale = 1.0 / scale
            mask = match.masks[0] if match.masks else None
            for term in match.masks[1:]:
                total = graph.call_function(aten.add.Tensor, (mask, term))
                with fake_value(term).fake_mode:
                    total.meta["val"] = fake_value(mask) + fake_value(term)
                mask = total
            kwargs = {"attn_mask": mask, "scale": float(scale), "enable_gqa": gqa}
            fused = graph.call_function(aten.scaled_dot_product_attention.default, (query, key, value), kwargs)
        fused.meta["val"] = fresh_fake(fake_value(match.result))
        match.result.replace_all_uses_with(fused)
    if matches:
        finish_rewrites(gm)
    return len(matches)
