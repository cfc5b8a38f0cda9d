"""The references a converted model is compared with, each yielding (value name, array) pairs
one at a time, so that no run needs every intermediate tensor in memory at once."""
import os

import numpy as np

import estuary


class EstuaryF64:
    """Estuary's own run of the model as translated, with no optimization pipeline, every float
    computed in f64, on the `reference` device (plain kernels, no fusions, no 16 bits)."""

    name = "estuary-f64"

    def __init__(self, model, load_kwargs, input_shapes):
        self.model = estuary.convert(model, input_shapes=input_shapes, pipeline="", device="reference",
                                     precision_mode="fp64", **load_kwargs)
        self.producers = {}  # value name -> (node name, op type)

    def values(self, feeds, wanted, on_value):
        """Runs the reference, calling on_value(name, array) for each value in `wanted`."""
        def observe(info, array):
            # A graph output leaves in its model's dtype, through a Cast the precision pass adds:
            # the node that computed it is the one that made '<name>_f64'.
            computed = info["value"] + "_f64"
            if info["op"] == "Cast" and info["inputs"] == [computed] and computed in self.producers:
                self.producers[info["value"]] = self.producers[computed]
            else:
                self.producers[info["value"]] = (info["node"], info["op"])
            if info["value"] in wanted:
                on_value(info["value"], array)

        outputs = self.model.run_observed(feeds, observe)
        for output, array in zip(self.model.outputs, outputs):
            if output["name"] in wanted:
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
        self.producers = {}
        for index, node in enumerate(self.onnx_model.graph.node):
            for output in node.output:
                if output:
                    self.producers[output] = (node.name or f"{node.op_type}_{index}", node.op_type)

    def values(self, feeds, wanted, on_value, sizes, budget_bytes):
        import onnxruntime
        names = [name for name in wanted if name in self.producers]
        batches, batch, batch_bytes = [], [], 0
        for name in names:
            if batch and batch_bytes + sizes.get(name, 0) > budget_bytes:
                batches.append(batch)
                batch, batch_bytes = [], 0
            batch.append(name)
            batch_bytes += sizes.get(name, 0)
        if batch:
            batches.append(batch)
        options = onnxruntime.SessionOptions()
        if self.threads:
            options.intra_op_num_threads = self.threads
        for batch in batches:
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
