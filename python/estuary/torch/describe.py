"""Walks an ATen-level FX graph and writes down what each node says, for the C++ frontend.

Python only reads the FX objects here: node kinds, targets, arguments (references to earlier
nodes, Python constants, lists), the dtypes and sizes of fake values. Symbolic sizes are
written as their expressions ("s27", "2*s27"), which become symbolic dims in Estuary's IR.
"""
import torch

from .._estuary import fx as _fx

_DTYPES = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
    torch.uint8: "u8", torch.bool: "bool",
}
TORCH_DTYPES = {name: dtype for dtype, name in _DTYPES.items()}


def dtype_name(dtype):
    if dtype not in _DTYPES:
        raise TypeError(f"estuary.torch: dtype {dtype} has no Estuary equivalent")
    return _DTYPES[dtype]


def target_name(target):
    """How the C++ op table names a call_function target: "aten.add.Tensor", "operator.getitem"."""
    if isinstance(target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
        return str(target)
    if getattr(target, "__module__", None) in ("_operator", "operator"):
        return "operator." + target.__name__
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__name__', repr(target))}"


def argument_names(target, count):
    """The schema's names of a call's first `count` positional arguments: an op overload's
    schema, "a", "b" ... for Python operators, "arg0" ... for anything else."""
    schema = getattr(target, "_schema", None)
    if schema is not None:
        names = [argument.name for argument in schema.arguments]
    elif getattr(target, "__module__", None) in ("_operator", "operator"):
        names = ["a", "b", "c"]
    else:
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(count)]


def size_text(size):
    if isinstance(size, torch.SymInt):
        hint = size.node.maybe_as_int() if hasattr(size.node, "maybe_as_int") else None
        return str(hint) if hint is not None else str(size.node.expr).replace(" ", "")
    return str(int(size))


def is_symint_node(node):
    return isinstance(node.meta.get("val"), (torch.SymInt, int)) and not isinstance(node.meta.get("val"), bool)


def _result_dtypes(value):
    if isinstance(value, torch.Tensor):
        return [_DTYPES.get(value.dtype, "")]
    if isinstance(value, (list, tuple)):
        return [_DTYPES.get(v.dtype, "") if isinstance(v, torch.Tensor) else "" for v in value]
    if isinstance(value, torch.SymInt):
        return ["i64"]
    return []


def describe_graph(gm, weights, concrete_sizes=None, scalar_inputs=()):
    """(nodes, outputs) for _fx.translate.

    weights: {placeholder index: real tensor} for placeholders that become constants.
    concrete_sizes: None to keep symbolic sizes; else {symbol expression: int}, which fixes
        every symbolic size (and the SymInt nodes computed from them) to a value.
    scalar_inputs: the indices of SymInt placeholders whose values the caller passes at run
        time (with symbolic sizes only).
    """
    index = {}
    nodes = []
    symbolic_values = {}

    def evaluate(value):
        expr = value.node.expr
        return int(expr.xreplace({s: concrete_sizes[str(s)] for s in expr.free_symbols}))

    def sizes_of(value):
        if concrete_sizes is None:
            return [size_text(s) for s in value.shape]
        return [str(evaluate(s)) if isinstance(s, torch.SymInt) else str(int(s)) for s in value.shape]

    def arg(value):
        if isinstance(value, torch.fx.Node):
            if value in symbolic_values:
                return symbolic_values[value]
            return _fx.Ref(index[value])
        if isinstance(value, (list, tuple)):
            return [arg(v) for v in value]
        if isinstance(value, torch.dtype):
            return dtype_name(value)
        if isinstance(value, (torch.device, torch.memory_format, torch.layout)):
            return str(value)
        if isinstance(value, (bool, int, float, str)) or value is None:
            return value
        raise TypeError(f"estuary.torch: an FX argument of type {type(value).__name__} ({value!r}) cannot be handed over")

    placeholder = 0
    outputs = []
    for node in gm.graph.nodes:
        value = node.meta.get("val")
        if node.op == "placeholder":
            if is_symint_node(node):
                if concrete_sizes is not None:
                    symbolic_values[node] = evaluate(value) if isinstance(value, torch.SymInt) else int(value)
                index[node] = len(nodes)
                nodes.append(("symint", node.name, size_text(value), placeholder in scalar_inputs))
            elif placeholder in weights:
                index[node] = len(nodes)
                nodes.append(("weight", node.name, dtype_name(value.dtype), sizes_of(value), weights[placeholder]))
            else:
                index[node] = len(nodes)
                nodes.append(("input", node.name, dtype_name(value.dtype), sizes_of(value)))
            placeholder += 1
        elif node.op == "call_function":
            if concrete_sizes is not None and isinstance(value, torch.SymInt):
                symbolic_values[node] = evaluate(value)
                continue
            index[node] = len(nodes)
            kwargs = {key: arg(v) for key, v in node.kwargs.items()}
            nodes.append(("call", node.name, target_name(node.target), arg(list(node.args)), kwargs,
                          _result_dtypes(value), argument_names(node.target, len(node.args))))
        elif node.op == "get_attr":
            # A tensor the graph holds (torch.tensor(...) made in forward, lifted by aot): a
            # constant, like a parameter.
            tensor = gm
            for part in node.target.split("."):
                tensor = getattr(tensor, part)
            if not isinstance(tensor, torch.Tensor):
                raise TypeError(f"estuary.torch: FX node '{node.name}' reads '{node.target}', which is not a tensor")
            tensor = tensor.detach()
            index[node] = len(nodes)
            nodes.append(("weight", node.name, dtype_name(tensor.dtype), [str(int(s)) for s in tensor.shape],
                          tensor if tensor.is_contiguous() else tensor.contiguous()))
        elif node.op == "output":
            results = node.args[0]
            outputs = list(results) if isinstance(results, (list, tuple)) else [results]
        else:
            raise TypeError(f"estuary.torch: FX node '{node.name}' of kind {node.op} is not translated")
    return nodes, outputs, index


def output_layout(gm):
    """The graph's output node arguments, and whether they form a tuple/list."""
    for node in gm.graph.nodes:
        if node.op == "output":
            results = node.args[0]
            if isinstance(results, (list, tuple)):
                return list(results), True
            return [results], False
    return [], True

