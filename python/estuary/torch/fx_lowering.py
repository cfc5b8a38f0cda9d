"""FX mode's last step: the optimized graph's calls bound to what they run, so that a call
costs what eager PyTorch's costs (ONNX Runtime's rule: resolve at build, not per run).

- Estuary's fused ops (torch.ops.estuary.*) call Estuary's kernel directly, a C++ callable
  chosen here for the dtypes and ranks the node's fake values give (or, for tensors the
  kernels do not take, ops.py's PyTorch formula): through the dispatcher, a custom op costs
  about 14 us a call in its autograd and fake-tensor layers, more than the kernel itself on
  a decode step's activations.
- ATen ops Estuary's kernel runs several times faster call that kernel: max pooling whose
  indices nothing reads (ATen's CPU kernel computes them, serially: 7.6 ms against Estuary's
  0.8 ms, plus 0.6 ms for the NaN check below, for ResNet's 64x112x112 pooling on 2 cores).
- prims.convert_element_type, which AOT emits for a model's Python floats with
  dynamic=True, runs as aten._to_copy: the prim's eager implementation is Python (about
  23 us against 4 us), and a conversion to the dtype a value already has is dropped where
  nothing writes the result in place.
- A view whose layout is known when the graph is built (static sizes, and a base whose
  layout is known: a graph input, whose sizes and strides Dynamo's guards check; a GEMM's or
  Estuary kernel's fresh contiguous result; another such view) is made with
  _reinterpret_tensor, as inductor's code makes its views: 0.7 us against 1.5-3 us through
  the view op's dispatcher layers, and a transformer block has a dozen.
- A copy to the contiguous layout of a tensor known to have it already, which nothing writes,
  is dropped: Hugging Face attention's attn_output.transpose(1, 2).contiguous() after SDPA,
  whose CPU kernel lays its output out that way.
- ATen overloads are called through their C++ operator (OpOverload._op), without
  OpOverload.__call__'s Python frame (about 0.3 us of a 2 us call).
"""
import operator

import torch

from .._estuary import fx as _fx
from . import kernels, ops
from .fx_attention import is_view, reinterpret, storage_of

_CONVERT = torch.ops.prims.convert_element_type.default
_TO_COPY = torch.ops.aten._to_copy.default
aten = torch.ops.aten
# Ops whose result is a new contiguous tensor on every call.
_FRESH_CONTIGUOUS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default,
                     aten.linear.default}
# SDPA's CPU kernel allocates its output as [B, S, H, D] and returns it transposed to
# [B, H, S, D]; its meta function (what FX's values hold) states the same layout.
_SDPA_CPU = aten._scaled_dot_product_flash_attention_for_cpu.default
_CLONE = aten.clone.default


def _bound_operator(overload):
    """An ATen overload's C++ operator, called with no Python frame of its own: an instance
    of a class whose __call__ is the operator itself. FX's code names the call
    aten_<op>_<overload>."""
    name = f"{overload._schema.name.split('::')[-1]}_{overload._overloadname}".replace(".", "_")
    bound = type(name, (), {"__call__": staticmethod(overload._op), "__module__": "aten"})()
    bound.__name__ = name
    return bound


def _writes_argument(user, node):
    """Whether `user` may write `node` in place (an in-place or out= op, or copy_)."""
    target = user.target
    if not isinstance(target, torch._ops.OpOverload):
        return user.op == "call_function"  # unknown callables: assume the worst
    schema = target._schema
    for position, argument in enumerate(schema.arguments):
        value = user.args[position] if position < len(user.args) else user.kwargs.get(argument.name)
        if value is node and argument.alias_info is not None and argument.alias_info.is_write:
            return True
    return False


def _lower_conversions(graph):
    """prims.convert_element_type -> aten._to_copy, or the input itself where it has the dtype
    already and no user writes the result. Returns (made _to_copy, dropped)."""
    made = dropped = 0
    for node in [n for n in graph.nodes if n.op == "call_function" and n.target is _CONVERT]:
        source, dtype = node.args[0], node.args[1]
        value = source.meta.get("val") if isinstance(source, torch.fx.Node) else None
        if isinstance(value, torch.Tensor) and value.dtype == dtype and \
                not any(user.op == "output" or _writes_argument(user, node) for user in node.users):
            node.replace_all_uses_with(source)
            graph.erase_node(node)
            dropped += 1
            continue
        node.target, node.args, node.kwargs = _TO_COPY, (source,), {"dtype": dtype}
        made += 1
    return made, dropped


def _lower_fused(graph):
    """Estuary's fused ops -> their kernels, or their PyTorch formulas. Returns the nodes now
    calling a TorchOp (whose results are new contiguous tensors), and the counts of fused ops
    and of formulas."""
    calls_kernel, fused, formulas = set(), 0, 0
    for node in graph.nodes:
        if node.op != "call_function" or node.target not in ops.FUSED:
            continue
        fused_op = ops.FUSED[node.target]
        fakes = [a.meta.get("val") for a in node.args[:fused_op.tensors]]
        kernel = fused_op.kernel(fakes) if all(isinstance(f, torch.Tensor) for f in fakes) else None
        node.target = fused_op if kernel is None else kernel
        fused += 1
        if kernel is None:
            formulas += 1
        elif isinstance(kernel, _fx.TorchOp):
            calls_kernel.add(node)
    return calls_kernel, fused, formulas


class _MaxPool:
    """Estuary's MaxPool kernel with PyTorch's rule for NaN, which a window holding one pools to
    and oneDNN's kernel drops: an input whose sum is NaN (it holds a NaN, or infinities of both
    signs) is pooled by ATen's kernel. The sum costs one read of the input."""

    __module__, __name__ = "estuary", "max_pool2d"  # FX's code names the call after these

    def __init__(self, node):
        self.arguments = node.args[1:]
        constants = tuple(tuple(a) if isinstance(a, (list, tuple)) else a for a in self.arguments)
        self.kernel = kernels.op("aten.max_pool2d.default", (torch.float32,), (4,), fixed=constants)

    def __call__(self, x):
        if torch.isnan(x.sum()):
            return aten.max_pool2d_with_indices.default(x, *self.arguments)[0]
        return self.kernel(x)


def _max_pool_kernel(node):
    """Estuary's MaxPool for an f32 max_pool2d_with_indices of a contiguous input, when only
    the pooled values are read (then node's users are getitem[0]s)."""
    value = node.args[0].meta.get("val")
    if not isinstance(value, torch.Tensor) or value.dtype != torch.float32 or value.dim() != 4 \
            or not value.is_contiguous() or any(u.target is not operator.getitem or u.args[1] != 0 for u in node.users):
        return None
    return _MaxPool(node)


_FASTER_IN_ESTUARY = {aten.max_pool2d_with_indices.default: _max_pool_kernel}


def _lower_to_estuary_kernels(graph):
    """ATen ops in _FASTER_IN_ESTUARY -> Estuary's kernel where it takes them. Returns the
    nodes now calling a kernel."""
    lowered = set()
    for node in graph.nodes:
        kernel = _FASTER_IN_ESTUARY[node.target](node) if node.target in _FASTER_IN_ESTUARY else None
        if kernel is None:
            continue
        for user in list(node.users):  # the pooled values' getitem[0]s
            user.replace_all_uses_with(node)
            graph.erase_node(user)
        node.target, node.args, node.kwargs = kernel, node.args[:1], {}
        node.meta["val"] = node.meta["val"][0]
        lowered.add(node)
    return lowered


def _static_layout(value):
    return isinstance(value, torch.Tensor) and all(
        type(n) is int for n in (*value.shape, *value.stride(), value.storage_offset()))


def _known_layout(node, calls_kernel, reinterpreted):
    """Whether node's tensor has, on every call, the layout its FX value states."""
    value = node.meta.get("val")
    if not _static_layout(value):
        return False
    if node.op == "placeholder" or node in reinterpreted:
        return True
    contiguous = value.is_contiguous()
    if node.target is _CLONE:
        return node.kwargs.get("memory_format") == torch.contiguous_format
    if node.target is operator.getitem:
        source, index = node.args
        return (contiguous and source in calls_kernel) or (source.target is _SDPA_CPU and index == 0)
    return contiguous and (node in calls_kernel or node.target in _FRESH_CONTIGUOUS)


def _viewed_base(node):
    """The tensor node views: a view op's input, or for one piece of a split or unbind (a
    getitem of a view op returning several tensors), that op's input. None for other nodes."""
    if node.op != "call_function":
        return None
    if node.target is operator.getitem:
        source = node.args[0]
        return _viewed_base(source) if isinstance(source.meta.get("val"), (list, tuple)) else None
    if isinstance(node.target, torch._ops.OpOverload) and (is_view(node) or node.target is aten._unsafe_view.default) \
            and isinstance(node.args[0], torch.fx.Node):
        return node.args[0]
    return None


def _view_candidates(graph):
    """The views a call could make by reinterpreting their base's memory, less those that must
    stay view ops: one some op writes through, or that the graph returns (writes through a view
    must reach its base's version counter, and AOT regenerates returned aliases from their
    base). Read while every target is still an OpOverload."""
    candidates = [n for n in graph.nodes if _viewed_base(n) is not None]
    keep = set()
    for node in reversed(candidates):
        if any(user.op == "output" or _writes_argument(user, node) or user in keep for user in node.users):
            keep.add(node)
    return [node for node in candidates if node not in keep]


def _reinterpret_views(graph, candidates, calls_kernel):
    """Views of a known layout -> _reinterpret_tensor; a split or unbind whose pieces all are
    made so is erased. Each view's base is read now: lowering may have replaced it (a max
    pooling's getitem by the pooling itself)."""
    reinterpreted = set()
    for node in candidates:
        base, value = _viewed_base(node), node.meta.get("val")
        if base is None or not _static_layout(value) or not _known_layout(base, calls_kernel, reinterpreted):
            continue
        offset = value.storage_offset() - base.meta["val"].storage_offset()
        source = node.args[0]
        node.target, node.args, node.kwargs = reinterpret, (base, tuple(value.shape), value.stride(), offset), {}
        reinterpreted.add(node)
        if source is not base and not source.users:
            graph.erase_node(source)
    return reinterpreted


def _written_storages(graph):
    """The storages some op writes in place. Read while every target is still an OpOverload."""
    written = set()
    for node in graph.nodes:
        if node.op == "call_function" and node.target is not operator.getitem:
            written.update(storage_of(a) for a in node.all_input_nodes if _writes_argument(node, a))
    return written


def _drop_contiguous_copies(graph, calls_kernel, reinterpreted, written):
    """clone(x, memory_format=contiguous) -> x where x is known to be contiguous, and neither x's
    storage nor the copy's is written, nor is the copy or a view of it returned (the caller
    owns what the graph returns, which AOT has found aliases nothing else)."""
    output = next(n for n in graph.nodes if n.op == "output")
    returned = {storage_of(node) for node in output.all_input_nodes}
    dropped = 0
    for node in [n for n in graph.nodes if n.target is _CLONE]:
        source = node.args[0]
        if node.kwargs.get("memory_format") not in (None, torch.contiguous_format, torch.preserve_format) \
                or not _known_layout(source, calls_kernel, reinterpreted) or not source.meta["val"].is_contiguous() \
                or storage_of(source) in written or storage_of(node) in written or storage_of(node) in returned:
            continue
        node.replace_all_uses_with(source)
        graph.erase_node(node)
        dropped += 1
    return dropped


def _bind_operators(graph):
    """ATen overloads -> their C++ operators. Returns how many calls were bound."""
    operators, bound = {}, 0
    for node in graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) \
                and node.target.namespace == "aten":
            if node.target not in operators:
                operators[node.target] = _bound_operator(node.target)
            node.target = operators[node.target]
            bound += 1
    return bound


def lower_calls(gm):
    """Binds gm's calls (in place); returns a line for the log."""
    graph = gm.graph
    made, dropped = _lower_conversions(graph)
    candidates, written = _view_candidates(graph), _written_storages(graph)
    calls_kernel, fused, formulas = _lower_fused(graph)
    faster = _lower_to_estuary_kernels(graph)
    calls_kernel |= faster
    reinterpreted = _reinterpret_views(graph, candidates, calls_kernel)
    copies = _drop_contiguous_copies(graph, calls_kernel, reinterpreted, written)
    bound = _bind_operators(graph)
    graph.lint()
    gm.recompile()
    return (f"{fused} Estuary op(s) ({formulas} of them as PyTorch formulas, for tensors Estuary's kernels do "
            f"not take), {len(faster)} ATen op(s) run by Estuary's faster kernel, {len(reinterpreted)} view(s) made "
            f"by reinterpreting their base's memory, {copies} copy(ies) to a layout the tensor had dropped, {bound} "
            f"ATen call(s) bound directly, {made} prims conversion(s) run as aten._to_copy, {dropped} dropped (the "
            "value had the dtype)")
