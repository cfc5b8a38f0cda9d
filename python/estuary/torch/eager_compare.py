"""CompilerConfig(compare=True): a compiled graph's values against eager PyTorch's, node by node.

On the first call of a graph, before its compiled run, the optimized IR graph is built as an
estuary.Model and run with an observer on copies of the call's inputs, and the FX graph runs
eagerly on copies too (the calls mutate the copies, not the caller's KV cache). Estuary's
values are matched with FX nodes by name: the frontend names a value after the FX node that
computes it (result i > 0 of a multi-result node as "<node>#<i>"), and a node the pipeline or
the backend fuses reports the value of the last node it covers.

Neither side is held whole: Estuary's values that have an FX counterpart wait in a temporary
folder, one .npy file each, and eager values are measured as the interpreter computes them
and dropped once no later node reads them (torch.fx.Interpreter's garbage collection).
"""
import os
import tempfile

import numpy as np
import torch

import estuary
from ..compare.metrics import thresholds_for
from ..compare.report import Report
from ..compare.spool import Spool
from . import describe

# Where reports go when CompilerConfig.debug_dir is not set.
DEFAULT_DIRECTORY = "estuary_debug"


def value_name(node, index):
    """The name of the IR value for result `index` of an FX node."""
    return node.name if index == 0 else f"{node.name}#{index}"


def result_names(node):
    """The names of the IR values for an FX node's tensor results."""
    value = node.meta.get("val")
    results = value if isinstance(value, (list, tuple)) else [value]
    return [value_name(node, i) for i, result in enumerate(results) if isinstance(result, torch.Tensor)]


def _numpy(tensor):
    """A NumPy copy of a CPU tensor; 16-bit floats widened to f32 (NumPy has no bf16)."""
    tensor = tensor.detach()
    if tensor.dtype in (torch.bfloat16, torch.float16):
        tensor = tensor.float()
    return tensor.contiguous().numpy().copy()


def _feed(tensor):
    """A NumPy copy of an input in its own dtype, bf16 as ml_dtypes' bfloat16."""
    tensor = tensor.detach().contiguous()
    if tensor.dtype == torch.bfloat16:
        import ml_dtypes
        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return tensor.numpy().copy()


class _RecordingInterpreter(torch.fx.Interpreter):
    """Runs the FX graph eagerly, handing each tensor result to on_value(node, result index, tensor)."""

    def __init__(self, gm, on_value):
        super().__init__(gm, garbage_collect_values=True)
        self.on_value = on_value

    def run_node(self, node):
        result = super().run_node(node)
        if node.op in ("call_function", "call_method", "call_module"):
            results = result if isinstance(result, (list, tuple)) else [result]
            for i, value in enumerate(results):
                if isinstance(value, torch.Tensor):
                    self.on_value(node, i, value)
        return result


def compare_with_eager(gm, graph, args, runtime, static, config, name, debug):
    """Compares `graph` (the optimized IR of `gm`) with eager PyTorch on `args`, the call's
    arguments (runtime: the indices of those the graph takes as inputs; static: parameters),
    writes the report and returns (report, path of its text table)."""
    mode = config.effective_precision_mode
    min_cosine, max_rel = thresholds_for(mode)
    producers = {}  # IR value name -> (FX node name, target)
    for node in gm.graph.nodes:
        if node.op == "call_function":
            for name_of_result in result_names(node):
                producers[name_of_result] = (node.name, describe.target_name(node.target))

    # Built with the compiled graph's options, so that both compute in the same dtypes.
    options = config.build_options
    observed = estuary.Model(graph, threads=config.effective_threads, options=options)
    feeds = [_feed(args[i]) if isinstance(args[i], torch.Tensor) else np.array(int(args[i]), dtype=np.int64)
             for i in runtime]
    with tempfile.TemporaryDirectory(prefix="estuary_torch_compare_") as folder:
        spool = Spool(folder)
        observed.run_observed(feeds, lambda info, array: spool.keep(info, array, matched=info["value"] in producers))

        def check(node, index, tensor):
            name_of_result = value_name(node, index)
            if name_of_result in spool.waiting:
                row = spool.measure(name_of_result, _numpy(tensor), min_cosine, max_rel)
                row.node, row.op = producers[name_of_result]

        eager_args = [a.clone() if isinstance(a, torch.Tensor) and i not in static else a for i, a in enumerate(args)]
        with torch.no_grad():
            _RecordingInterpreter(gm, check).run(*eager_args)

    report = Report(model=name, reference="eager PyTorch", precision_mode=config.precision_mode or "origin",
                    device="cpu", pipeline=config.effective_pipeline, min_cosine=min_cosine, max_rel=max_rel,
                    rows=spool.rows, outputs=[output["name"] for output in observed.outputs])
    return report, _write(report, name, debug)


def report_directories(debug):
    """The compare/ folders of this compiled model's dumps, or ./estuary_debug/estuary/compare."""
    if debug.enabled:
        return [os.path.join(root, debug.model, "compare") for root in debug.roots]
    return [os.path.join(os.path.abspath(DEFAULT_DIRECTORY), "estuary", "compare")]


def _write(report, name, debug):
    try:
        import matplotlib  # noqa: F401  (the plot is drawn only where matplotlib is installed)
        plot = True
    except ImportError:
        plot = False
    table = report.table(rows=0)
    directories = report_directories(debug)
    for directory in directories:
        os.makedirs(directory, exist_ok=True)
        base = os.path.join(directory, name)
        report.to_json(base + ".json")
        report.to_csv(base + ".csv")
        with open(base + ".txt", "w") as file:
            file.write(table + "\n")
        if plot:
            report.plot(base + ".png")
    return os.path.join(directories[0], name + ".txt")
