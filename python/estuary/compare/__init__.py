"""Where a converted model drifts: Estuary's run compared with a reference node by node.

    import estuary.compare
    report = estuary.compare.compare("model.onnx", precision_mode="bf16")
    print(report.table())                   # and report.to_json(path), to_csv(path), plot(path)
    report.first_past_threshold             # the first node whose result is too far off, or None

Every result Estuary computes is matched by its value's name with the reference's, so a node
fused with others reports under the last node it covers (the fused result is that node's).
The nodes of the built model are checked in the order they run; the first one past the
thresholds is reported with the figures of its inputs, which tell whether the node itself or
what it was given drifted. `estuary compare` (python -m estuary.compare) is the command line.
"""
import os
import tempfile

import numpy as np

import estuary

from .metrics import thresholds_for
from .references import EstuaryF64, Framework, OnnxRuntime, find_framework_python, framework_of
from .report import Report, Row
from .spool import Spool

__all__ = ["compare", "Report", "Row", "REFERENCES", "thresholds_for"]

REFERENCES = ("auto", "onnxruntime", "framework", "estuary-f64")

def compare(model, inputs=None, *, reference="auto", input_shapes=None, pipeline="O2", device="cpu",
            precision_mode="origin", allow_slow_precision=False, threads=0, min_cosine=None, max_rel=None, seed=0,
            memory_budget=256 << 20, spool_dir=None, framework_python=None, **load_kwargs):
    """Converts `model` as estuary.convert does (pipeline, device, precision_mode,
    allow_slow_precision, input_shapes and the loading keywords: framework, weights, ...), runs it and the reference on the same inputs, and returns a Report.

    inputs: {name: array}; inputs not given are drawn at random from `seed` (floats from a
        normal distribution, integers in [0, 10), booleans), at the shapes input_shapes fixes.
    reference: 'onnxruntime' (ONNX files), 'framework' (TensorFlow itself for a SavedModel or
        frozen GraphDef, Paddle itself for a PIR or legacy inference program, MindSpore itself
        for a MindIR, in a Python of its own), 'estuary-f64' (the model as translated,
        unoptimized, in f64 on the reference device; any model), or 'auto': ONNX Runtime for an
        ONNX file, the framework for its models when a Python with it is found, else estuary-f64.
    min_cosine, max_rel: a node past either is drifted; defaults depend on precision_mode.
    memory_budget: the most bytes of reference tensors held at once (ONNX Runtime's and the
        framework's batches).
    spool_dir: where Estuary's tensors wait for the reference's (a temporary folder by default;
        it needs as many bytes as the model's intermediate results).
    framework_python: the Python that runs the framework (reference 'framework'); by default
        ESTUARY_PYTHON_ENVS/<framework>/bin/python, else this Python when the framework is
        installed in it.
    """
    default_cosine, default_rel = thresholds_for(precision_mode)
    min_cosine = default_cosine if min_cosine is None else min_cosine
    max_rel = default_rel if max_rel is None else max_rel
    path = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
    is_onnx = path is not None and path.endswith(".onnx") and load_kwargs.get("framework") in (None, "onnx")
    framework = framework_of(path, load_kwargs)
    if reference == "auto":
        reference = "onnxruntime" if is_onnx else "estuary-f64"
        if framework:
            try:
                framework_python = find_framework_python(framework, framework_python)
                reference = "framework"
            except estuary.EstuaryError:
                if framework_python:  # named, so meant: its absence is said
                    raise
                # no Python with the framework: Estuary's own f64 run serves
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {', '.join(REFERENCES)}, got {reference!r}")
    if reference == "onnxruntime" and not is_onnx:
        raise ValueError(f"reference 'onnxruntime' takes an .onnx file; {model!r} is not one (use 'estuary-f64')")
    if reference == "framework":
        if not framework:
            raise ValueError(f"reference 'framework' takes a TensorFlow model (a SavedModel, a frozen .pb), a "
                             f"Paddle program (inference.json, .pdmodel) or a MindIR (.mindir); "
                             f"{model!r} is not one (use 'estuary-f64')")
        framework_python = find_framework_python(framework, framework_python)

    tested = estuary.convert(model, input_shapes=input_shapes, pipeline=pipeline, device=device,
                             precision_mode=precision_mode, allow_slow_precision=allow_slow_precision,
                             threads=threads, **load_kwargs)
    feeds = _feeds(tested, inputs or {}, seed)

    with tempfile.TemporaryDirectory(prefix="estuary_compare_", dir=spool_dir) as folder:
        spool = Spool(folder)
        outputs = tested.run_observed(feeds, spool.keep)
        for output, array in zip(tested.outputs, outputs):
            if output["name"] not in spool.waiting:  # a graph input or constant passed through
                spool.keep({"value": output["name"], "node": "", "op": "", "inputs": []}, array)

        output_names = [output["name"] for output in tested.outputs]
        graph_outputs = set(output_names)

        def check(name, expected):
            # An intermediate result may be in another axis order than the reference's under the
            # same name (sink_transposes); an output never is, so its order is checked as it is.
            spool.measure(name, expected, min_cosine, max_rel, other_orders=name not in graph_outputs)

        wanted, sizes = list(spool.waiting), spool.sizes
        try:
            if reference == "onnxruntime":
                ref = OnnxRuntime(path, threads)
                ref.values(feeds, wanted, check, sizes, memory_budget)
            elif reference == "framework":
                ref = Framework(framework, path, load_kwargs, framework_python, threads, folder)
                ref.values(feeds, wanted, check, sizes, memory_budget)
            else:
                ref = EstuaryF64(model, load_kwargs, input_shapes)
                ref.values(feeds, set(wanted), check)
        except estuary.EstuaryError:
            raise
        except Exception as error:  # the reference's own errors (ONNX Runtime's Fail, ...), said as such
            raise estuary.EstuaryError(f"{model}: the reference ({reference}) failed: {error}") from error
        rows = spool.rows
        for row in rows:
            row.node, row.op = ref.producers.get(row.value, (row.estuary_node, row.estuary_op))
            if not row.compared:
                row.unavailable = ref.unavailable.get(row.value)
        name = framework if reference == "framework" else reference
        return Report(model=str(model), reference=name, precision_mode=precision_mode, device=device,
                      pipeline=pipeline, min_cosine=min_cosine, max_rel=max_rel, rows=rows, outputs=output_names)


def _feeds(model, given, seed):
    """The inputs of a run: those given, the others drawn at random at the model's static shapes."""
    random = np.random.default_rng(seed)
    feeds = {}
    known = {info["name"] for info in model.inputs}
    for name in given:
        if name not in known:
            raise ValueError(f"input '{name}' is not an input of the model (inputs: {', '.join(sorted(known))})")
    for info in model.inputs:
        name = info["name"]
        if name in given:
            feeds[name] = np.ascontiguousarray(given[name])
            continue
        symbolic = [dim for dim in info["shape"] if not isinstance(dim, int)]
        if symbolic:
            raise ValueError(f"input '{name}' has symbolic dims ({', '.join(map(str, symbolic))}): give its data, "
                             f"or fix its shape with input_shapes (--input-shape {name}:...)")
        shape, dtype = info["shape"], info["dtype"]
        if dtype in ("f32", "f64", "f16", "bf16"):
            array = random.standard_normal(shape)
        elif dtype == "bool":
            array = random.integers(0, 2, shape).astype(bool)
        else:
            array = random.integers(0, 10, shape)
        feeds[name] = np.ascontiguousarray(array.astype(_numpy_dtype(dtype)))
    return feeds


def _numpy_dtype(name):
    if name == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bool": np.bool_, "i64": np.int64,
            "i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
            "u64": np.uint64}[name]
