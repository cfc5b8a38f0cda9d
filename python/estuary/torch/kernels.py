"""Estuary's kernels for single ops called from PyTorch: what FX mode's fused ops
(torch.ops.estuary.*) run.

An op is built per (target, input dtypes and ranks, constant arguments) as a one-node graph
with symbolic sizes (the same translation graph-engine mode uses, then the O2 pipeline, so
that Add + RMSNorm becomes the fused AddRMSNorm), and the GE backend keeps a plan per input
shape. A call is made in C++ (_estuary.fx.TorchOp): torch tensors in, new torch tensors out.
"""
import functools

import torch

from .._estuary import fx as _fx
from . import describe


def _build(target, dtypes, ranks, result_dtypes, constants):
    nodes = []
    for i, (dtype, rank) in enumerate(zip(dtypes, ranks)):
        nodes.append(("input", f"input{i}", describe.dtype_name(dtype), [f"k{i}_{d}" for d in range(rank)]))
    args = [_fx.Ref(i) for i in range(len(dtypes))] + list(constants)
    op_name = f"torch.ops.{target}"  # what errors name: the op the user or FX mode called
    nodes.append(("call", op_name, target, args, {}, [describe.dtype_name(d) for d in result_dtypes],
                  describe.argument_names(_op_of(target), len(args))))
    outputs = [_fx.Ref(len(dtypes))]
    if len(result_dtypes) > 1:
        outputs = []
        for k, dtype in enumerate(result_dtypes):
            nodes.append(("call", f"{op_name}[{k}]", "operator.getitem", [_fx.Ref(len(dtypes)), k], {},
                          [describe.dtype_name(dtype)], ["a", "b"]))
            outputs.append(_fx.Ref(len(nodes) - 1))
    graph = _fx.translate("estuary_" + target.replace(".", "_"), nodes, outputs, None)
    _fx.optimize(graph, "O2", "")
    return _fx.CompiledGraph(graph, 0)


def _op_of(target):
    namespace, name, overload = target.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), name), overload)


@functools.lru_cache(maxsize=None)
def op(target, dtypes, ranks, results=1, fixed=()):
    """The op `target` ("estuary.rms_norm.default") for tensors of these dtypes and ranks, as a
    callable taking those tensors, then its constant arguments (numbers or 0-d tensors), to
    which `fixed` ones are appended; it returns a tensor, or a tuple of `results` tensors.
    Results have the first input's dtype."""
    result_dtypes = [dtypes[0]] * results
    call = _fx.TorchOp(lambda constants: _build(target, dtypes, ranks, result_dtypes, constants),
                       list(dtypes), result_dtypes, torch.empty, torch.empty_like, target, list(fixed))
    call.__module__, call.__name__ = "estuary", target.split(".")[1]  # FX's code calls it estuary_<op>
    return call
