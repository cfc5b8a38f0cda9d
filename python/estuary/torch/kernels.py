"""Estuary's kernels for single ops called from PyTorch: what FX mode's fused ops
(torch.ops.estuary.*) run.

An op is built once per (target, dtypes, ranks, constant arguments) as a one-node graph
with symbolic sizes (the same translation graph-engine mode uses, then the O2 pipeline, so
that Add + RMSNorm becomes the fused AddRMSNorm), and the GE backend keeps a plan per input
shape: a call looks the plan up and runs it on the torch tensors' memory.
"""
import collections
import threading

import torch

from .._estuary import fx as _fx
from . import describe

_lock = threading.Lock()
_built = {}  # key -> _Kernel
_SHAPES_KEPT = 64  # output specs remembered per kernel (a decode loop sees a few shapes)


class _Kernel:
    def __init__(self, target, inputs, constants, result_dtypes):
        nodes = []
        for i, tensor in enumerate(inputs):
            sizes = [f"k{i}_{d}" for d in range(tensor.dim())]
            nodes.append(("input", f"input{i}", describe.dtype_name(tensor.dtype), sizes))
        args = [_fx.Ref(i) for i in range(len(inputs))] + list(constants)
        nodes.append(("call", "result", target, args, {}, [describe.dtype_name(d) for d in result_dtypes],
                      describe.argument_names(_op_of(target), len(args))))
        outputs = [_fx.Ref(len(inputs))] if len(result_dtypes) == 1 else []
        if len(result_dtypes) > 1:
            for k in range(len(result_dtypes)):
                nodes.append(("call", f"result_{k}", "operator.getitem", [_fx.Ref(len(inputs)), k], {},
                              [describe.dtype_name(result_dtypes[k])], ["a", "b"]))
                outputs.append(_fx.Ref(len(nodes) - 1))
        graph = _fx.translate("estuary_" + target.replace(".", "_"), nodes, outputs, None)
        from .graph_engine import _pipeline_spec
        _fx.optimize(graph, _pipeline_spec("O2"), "")
        self.model = _fx.CompiledGraph(graph, 0)
        self.specs = collections.OrderedDict()  # input shapes -> output specs, the most recent last
        self.lock = threading.Lock()  # a compiled graph has one run context (one run at a time)

    def __call__(self, inputs):
        inputs = [t if t.is_contiguous() else t.contiguous() for t in inputs]
        shapes = [list(t.shape) for t in inputs]
        key = tuple(tuple(s) for s in shapes)
        with self.lock:
            specs = self.specs.get(key)
            if specs is None:
                specs = self.specs[key] = self.model.output_specs([t.data_ptr() for t in inputs], shapes)
                if len(self.specs) > _SHAPES_KEPT:
                    self.specs.popitem(last=False)
            outputs = [torch.empty(shape, dtype=describe.TORCH_DTYPES[dtype]) for dtype, shape in specs]
            self.model.run([t.data_ptr() for t in inputs], shapes, [t.data_ptr() for t in outputs],
                           [list(t.shape) for t in outputs])
        return outputs


def _op_of(target):
    namespace, name, overload = target.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), name), overload)


def run(target, inputs, constants=(), results=1):
    """Runs the op `target` ("estuary.rms_norm.default") with Estuary's kernel on `inputs`
    (CPU tensors) and `constants` (numbers, part of the build); returns its results."""
    key = (target, tuple((t.dtype, t.dim()) for t in inputs), tuple(constants))
    kernel = _built.get(key)
    if kernel is None:
        with _lock:
            kernel = _built.get(key)
            if kernel is None:
                kernel = _built[key] = _Kernel(target, inputs, constants, [inputs[0].dtype] * results)
    return kernel(inputs)


def available(*tensors):
    """Whether Estuary's kernels take these tensors: f32 on the CPU, outside autograd (the
    kernels have no backward)."""
    differentiating = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    return not differentiating and all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)
