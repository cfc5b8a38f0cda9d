"""FX mode: matrix products made whole again.

AOT autograd decomposes nn.Linear on a 3-D input into t(W) + view + addmm (or mm) +
_unsafe_view, and torch.matmul of 4-D tensors into expand + clone + view + bmm + view. PyTorch
then runs each as a separate op, dispatched from Python: on small models the dispatches
cost more than the arithmetic. aten.linear and aten.matmul do the same work in one
dispatch (their own decomposition runs in C++), so these chains are put back:

    view(addmm(b, view(x), t(W)))  ->  linear(x, W, b)       (mm without b)
    view(bmm(view(A), view(B)))    ->  matmul(A, B)          (A, B below their expands/clones)
"""
import torch

from .fx_attention import RESHAPES, finish_rewrites, four_d_operand, fresh_fake, same_size, shape_of

aten = torch.ops.aten


def _sole_user(node):
    return next(iter(node.users)) if len(node.users) == 1 else None


def _flattened_input(node):
    """x, when node is view(x) flattening x's leading dims into one ([..., K] -> [N, K])."""
    if node.op != "call_function" or node.target not in RESHAPES:
        return None
    x = node.args[0]
    inner, outer = shape_of(x), shape_of(node)
    if not inner or not outer or len(outer) != 2 or len(inner) < 2 or not same_size(inner[-1], outer[1]):
        return None
    count = 1
    for size in inner[:-1]:
        count = count * size
    return x if same_size(count, outer[0]) else None


def _linear(node):
    """(x, W, b, the node linear replaces) for an mm/addmm of a Linear, or None."""
    if node.target is aten.addmm.default and len(node.args) == 3 and not node.kwargs:
        bias, flat, weight_t = node.args
    elif node.target is aten.mm.default:
        bias, (flat, weight_t) = None, node.args
    else:
        return None
    if weight_t.op != "call_function" or weight_t.target is not aten.t.default:
        return None
    weight = weight_t.args[0]
    if bias is not None and (shape_of(bias) is None or len(shape_of(bias)) != 1):
        return None
    x, result = flat, node
    flattened = _flattened_input(flat)
    unflatten = _sole_user(node)
    if flattened is not None and unflatten is not None and unflatten.target in RESHAPES:
        out = shape_of(unflatten)
        if out and len(out) == len(shape_of(flattened)) and all(same_size(a, b) for a, b in zip(out[:-1], shape_of(flattened)[:-1])):
            x, result = flattened, unflatten
    return x, weight, bias, result


def _matmul(node):
    """(A, B, the node matmul replaces) for a bmm of a decomposed 4-D matmul, or None."""
    if node.target is not aten.bmm.default:
        return None
    a, b = four_d_operand(node.args[0]), four_d_operand(node.args[1])
    unflatten = _sole_user(node)
    if a is None or b is None or unflatten is None or unflatten.target not in RESHAPES:
        return None
    out, sa, sb = shape_of(unflatten), shape_of(a), shape_of(b)
    if len(out) != 4 or not all(same_size(x, y) for x, y in zip(out, (sa[0], sa[1], sa[2], sb[3]))):
        return None
    return a, b, unflatten


def fuse_matmuls(gm):
    """Puts decomposed linears and matmuls back together in gm; returns how many."""
    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        linear = _linear(node)
        matmul = None if linear else _matmul(node)
        if linear is None and matmul is None:
            continue
        replaced = linear[3] if linear else matmul[2]
        with graph.inserting_before(replaced):
            if linear:
                x, weight, bias, _ = linear
                fused = graph.call_function(aten.linear.default, (x, weight, bias) if bias is not None else (x, weight))
            else:
                fused = graph.call_function(aten.matmul.default, matmul[:2])
        fused.meta["val"] = fresh_fake(replaced.meta["val"])
        replaced.replace_all_uses_with(fused)
        count += 1
    if count:
        finish_rewrites(gm)
    return count
