"""The references a converted model is compared with, each yielding (value name, array) pairs
one at a time, so that no run needs every intermediate tensor in memory at once."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import estuary

from ._framework_runner import batches


class EstuaryF64:
    """Estuary's own run of the model as translated, with no optimization pipeline, every float
    computed in f64, on the `reference` device (plain kernels, no fusions, no 16 bits)."""

    name = "estuary-f64"

    def __init__(self, model, load_kwargs, input_shapes):
        self.model = estuary.convert(model, input_shapes=input_shapes, pipeline="", device="reference",
                                     precision_mode="fp64", **load_kwargs)
        self.producers = {}  # value name -> (node name, op type)
        self.unavailable = {}  # it hands over every value its run computes

    def values(self, feeds, wanted, on_value):
        """Runs the reference, calling on_value(name, array) for each value in `wanted`."""
        delivered = set()

        def observe(info, array):
            # A graph output leaves in its model's dtype, through a Cast the precision pass adds
            # (unnamed): the node that computed it is the one that made the Cast's input
            # ('<name>_f64', or the value's name before the frontend named it after the output).
            computed = info["inputs"][0] if len(info["inputs"]) == 1 else None
            if info["op"] == "Cast" and computed in self.producers and \
                    (computed == info["value"] + "_f64" or not info["node"]):
                self.producers[info["value"]] = self.producers[computed]
            else:
                self.producers[info["value"]] = (info["node"], info["op"])
            if info["value"] in wanted:
                on_value(info["value"], array)
                delivered.add(info["value"])

        outputs = self.model.run_observed(feeds, observe)
        for output, array in zip(self.model.outputs, outputs):
            if output["name"] in wanted and output["name"] not in delivered:  # a graph input passed through
                on_value(output["name"], array)


class OnnxRuntime:
    """ONNX Runtime on the ONNX file: the values asked for become extra graph outputs, a batch at
    a time whose total size stays within `budget_bytes`, one session per batch."""

    name = "onnxruntime"

    def __init__(self, path, threads):
        import onnx  # the base environment has both; imported here so other references need neither
        import onnxruntime  # noqa: F401
        self.path = path
        self.threads = threads
        self.onnx_model = onnx.load(path, load_external_data=False)
        self.unavailable = {}  # a value it has goes back as a graph output, or the session fails
        self.producers = {}
        for index, node in enumerate(self.onnx_model.graph.node):
            for output in node.output:
                if output:
                    self.producers[output] = (node.name or f"{node.op_type}_{index}", node.op_type)

    def values(self, feeds, wanted, on_value, sizes, budget_bytes):
        import onnxruntime
        known = [[name, sizes.get(name, 0)] for name in wanted if name in self.producers]
        options = onnxruntime.SessionOptions()
        if self.threads:
            options.intra_op_num_threads = self.threads
        for batch in batches(known, budget_bytes):
            session = self._session_with_outputs(batch, options)
            fed = {item.name: feeds[item.name] for item in session.get_inputs()}
            results = session.run(batch, fed)
            for name, array in zip(batch, results):
                on_value(name, np.asarray(array))
            del results, session

    def _session_with_outputs(self, names, options):
        import onnx
        import onnxruntime
        marked = onnx.ModelProto()
        marked.CopyFrom(self.onnx_model)
        existing = {output.name for output in marked.graph.output}
        for name in names:
            if name not in existing:
                marked.graph.output.append(onnx.ValueInfoProto(name=name))
        external = any(tensor.data_location == onnx.TensorProto.EXTERNAL for tensor in marked.graph.initializer)
        if not external:
            return onnxruntime.InferenceSession(marked.SerializeToString(), options, providers=["CPUExecutionProvider"])
        # External data is found relative to the model file: the marked copy goes beside it.
        marked_path = os.path.join(os.path.dirname(os.path.abspath(self.path)),
                                   f".estuary_compare_{os.getpid()}.onnx")
        try:
            onnx.save(marked, marked_path)
            return onnxruntime.InferenceSession(marked_path, options, providers=["CPUExecutionProvider"])
        except OSError as error:
            raise estuary.EstuaryError(f"{self.path}: its weights are in external data, so the copy ONNX Runtime "
                                       f"runs must lie beside it, and it cannot be written there: {error}") from error
        finally:
            if os.path.exists(marked_path):
                os.remove(marked_path)


# The frameworks that can be a reference, by the name of their environment (ESTUARY_PYTHON_ENVS/<name>):
# the module that shows they are installed, and their runner, beside this file.
FRAMEWORKS = {
    "tensorflow": ("tensorflow", "_tensorflow_runner.py"),
    "paddle": ("paddle", "_paddle_runner.py"),
    "mindspore": ("mindspore", "_mindspore_runner.py"),
}


def framework_of(path, load_kwargs):
    """The framework among FRAMEWORKS whose model `path` is; None for others (ONNX, ...)."""
    named = load_kwargs.get("framework")
    if named:
        return named if named in FRAMEWORKS else None
    if path is None:
        return None
    if os.path.isdir(path):
        return "tensorflow" if os.path.exists(os.path.join(path, "saved_model.pb")) else None
    if path.endswith(".pb"):
        return "tensorflow"
    if path.endswith(".pdmodel") or (path.endswith(".json") and _is_pir_program(path)):
        return "paddle"
    if path.endswith(".mindir"):
        return "mindspore"
    return None


def _is_pir_program(path):
    """Whether a .json file is a Paddle PIR program: its "base_code" opens it (json.dump's
    order), or a .pdiparams of the same name lies beside it."""
    if os.path.exists(os.path.splitext(path)[0] + ".pdiparams"):
        return True
    try:
        with open(path, "rb") as file:
            return b'"base_code"' in file.read(4096)
    except OSError:
        return False


def find_framework_python(framework, given=None):
    """The Python that runs `framework`: `given`, else ESTUARY_PYTHON_ENVS/<framework>/bin/python,
    else this interpreter when the framework is installed in it; raises saying how to name one."""
    if given:
        if not os.path.exists(given):
            raise estuary.EstuaryError(f"framework_python '{given}' does not exist")
        return given
    environments = os.environ.get("ESTUARY_PYTHON_ENVS")
    if environments:
        python = os.path.join(environments, framework, "bin", "python")
        if os.path.exists(python):
            return python
    # find_spec locates the package without importing it: the framework never enters this process.
    if importlib.util.find_spec(FRAMEWORKS[framework][0]) is not None:
        return sys.executable
    looked = f"{os.path.join(environments, framework, 'bin', 'python')} does not exist, and " if environments else ""
    raise estuary.EstuaryError(
        f"no Python with {framework} found to run the reference: {looked}this Python ({sys.executable}) cannot "
        f"import {FRAMEWORKS[framework][0]}. Name one with framework_python= (--framework-python PATH), or set "
        f"ESTUARY_PYTHON_ENVS to a folder holding {framework}/bin/python; or use reference 'estuary-f64'")


class Framework:
    """The model's own framework, run by its runner script in the framework's Python (a process
    of its own: the frameworks bundle libraries that do not share one with Estuary), which
    writes the values asked for to `folder` a batch at a time within `budget_bytes`."""

    def __init__(self, framework, path, load_kwargs, python, threads, folder):
        self.name = framework
        self.path = os.path.abspath(path)
        self.python = python
        self.threads = threads
        self.folder = folder
        self.options = {key: load_kwargs[key] for key in ("signature",) if load_kwargs.get(key)}
        self.producers = {}
        self.unavailable = {}  # value name -> why the framework has it but could not hand it over

    def values(self, feeds, wanted, on_value, sizes, budget_bytes):
        """Runs the framework, calling on_value(name, array) for each value of `wanted` it has."""
        folder = tempfile.mkdtemp(prefix="reference_", dir=self.folder)
        try:
            self._run(feeds, wanted, on_value, sizes, budget_bytes, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _run(self, feeds, wanted, on_value, sizes, budget_bytes, folder):
        np.savez(os.path.join(folder, "feeds.npz"), **feeds)
        request = {"model": self.path, "feeds": os.path.join(folder, "feeds.npz"), "folder": folder,
                   "wanted": [[name, sizes.get(name, 0)] for name in wanted], "budget": budget_bytes,
                   "threads": self.threads, **self.options}
        with open(os.path.join(folder, "request.json"), "w") as file:
            json.dump(request, file)
        runner = os.path.join(os.path.dirname(os.path.abspath(__file__)), FRAMEWORKS[self.name][1])
        with open(os.path.join(folder, "stderr.txt"), "w+") as errors:
            process = subprocess.Popen([self.python, runner, os.path.join(folder, "request.json")],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True)
            done = False
            try:
                for line in process.stdout:
                    message = json.loads(line)
                    if "producers" in message:
                        self.producers = {name: tuple(producer) for name, producer in message["producers"].items()}
                    elif "value" in message:
                        on_value(message["value"], np.load(message["file"]))
                        os.remove(message["file"])
                    elif "batch_end" in message:
                        process.stdin.write("\n")
                        process.stdin.flush()
                    elif "done" in message:
                        self.unavailable = dict(message.get("skipped", {}))
                        done = True
            finally:
                if process.poll() is None and not done:
                    process.kill()
                process.stdin.close()
                status = process.wait()
            if status != 0 or not done:
                errors.seek(0)
                said = errors.read().strip().splitlines()
                # The runner's last lines say what failed (a traceback's exception line last).
                reason = "\n".join(said[-6:]) or f"it exited with status {status}"
                raise estuary.EstuaryError(f"{self.path}: {self.name} (run by {self.python}) failed:\n{reason}")
