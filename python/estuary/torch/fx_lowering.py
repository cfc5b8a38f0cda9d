"""FX mode's last step: the optimized graph's calls bound to what they run, so that a call
costs what eager PyTorch's costs (ONNX Runtime's rule: resolve at build, not per run).

- Estuary's fused ops (torch.ops.estuary.*) call Estuary's kernel directly, a C++ callable
  chosen here for the dtypes and ranks the node's fake values give (or, for tensors the
  kernels do not take, ops.py's PyTorch formula): through the dispatcher, a custom op costs
  about 14 us a call in its autograd and fake-tensor layers, more than the kernel itself on
  a decode step's activations.
- prims.convert_element_type, which AOT emits for a model's Python floats with
  dynamic=True, runs as aten._to_copy: the prim's eager implementation is Python (about
  23 us against 4 us), and a conversion to the dtype a value already has is dropped where
  nothing writes the result in place.
- ATen overloads are called through their C++ operator (OpOverload._op), without
  OpOverload.__call__'s Python frame (about 0.3 us of a 2 us call).
"""
import torch

from . import ops

_CONVERT = torch.ops.prims.convert_element_type.default
_TO_COPY = torch.ops.aten._to_copy.default


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


def lower_calls(gm):
    """Binds gm's calls (in place); returns a line for the log."""
    graph = gm.graph
    made, dropped = _lower_conversions(graph)
    fused = formulas = bound = 0
    operators = {}
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if node.target in ops.FUSED:
            fused_op = ops.FUSED[node.target]
            fakes = [a.meta.get("val") for a in node.args[:fused_op.tensors]]
            kernel = fused_op.kernel(fakes) if all(isinstance(f, torch.Tensor) for f in fakes) else None
            if kernel is None:
                formulas += 1
            node.target = fused_op if kernel is None else kernel
            fused += 1
        elif isinstance(node.target, torch._ops.OpOverload) and node.target.namespace == "aten":
            if node.target not in operators:
                operators[node.target] = _bound_operator(node.target)
            node.target = operators[node.target]
            bound += 1
    graph.lint()
    gm.recompile()
    return (f"{fused} Estuary op(s) ({formulas} of them as PyTorch formulas, for tensors Estuary's kernels do "
            f"not take) and {bound} ATen call(s) bound directly, {made} prims conversion(s) run as aten._to_copy, "
            f"{dropped} dropped (the value had the dtype)")
