"""TensorFlow as estuary.compare's reference, run in TensorFlow's Python (see _framework_runner.py):

    python _tensorflow_runner.py REQUEST.json       (REQUEST adds "signature" to the shared keys)

A frozen GraphDef (.pb) is imported as it is. A SavedModel's signature is frozen the way
tf2onnx does it (convert_variables_to_constants_v2, which inlines its calls), keeping
functional While and If as Estuary's translation keeps them. Either graph then runs in a
tf.compat.v1.Session, which can fetch any tensor of it.

Estuary names a value by its TensorFlow tensor, "node:index". A SavedModel's graph calls the
signature's function from one node (StatefulPartitionedCall_1, say) and Estuary inlines that
call too, so its names carry that node's name as a prefix the loaded signature lacks; graph
inputs and outputs take the signature's keys, a frozen graph's the nodes' names.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import _framework_runner  # noqa: E402  (beside this file, on sys.path as the script's folder)


class TensorFlowModel:
    CALLS = ("StatefulPartitionedCall", "PartitionedCall")

    def __init__(self, request, feeds):
        import tensorflow as tf
        self.tf = tf
        path = request["model"]
        if os.path.isdir(path):
            graph_def, self.inputs, self.outputs, self.prefix = self._saved_model(path, request.get("signature"))
        else:
            graph_def = tf.compat.v1.GraphDef()
            with open(path, "rb") as file:
                graph_def.ParseFromString(file.read())
            self.inputs = {node.name: node.name + ":0" for node in graph_def.node if node.op == "Placeholder"}
            self.outputs, self.prefix = {}, ""
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.import_graph_def(graph_def, name="")
        threads = request.get("threads") or 0
        config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads)
        self.session = tf.compat.v1.Session(graph=self.graph, config=config)
        self.feed_dict = {}
        for name, array in feeds.items():
            if name not in self.inputs:
                raise ValueError(f"{path}: TensorFlow's graph has no input '{name}' (its inputs: "
                                 f"{', '.join(sorted(self.inputs))})")
            tensor = self.graph.get_tensor_by_name(self.inputs[name])
            self.feed_dict[tensor] = array.astype(tensor.dtype.as_numpy_dtype)
        self.producers = {}
        for operation in self.graph.get_operations():
            producer = self._computing(operation)
            for output in operation.outputs:
                self.producers[self.prefix + output.name] = (self.prefix + producer.name, producer.type)
            if not os.path.isdir(path) and operation.outputs:  # a frozen graph's outputs take their nodes' names
                self.producers[operation.name] = (producer.name, producer.type)
        for key, tensor in self.outputs.items():
            producer = self._computing(self.graph.get_tensor_by_name(tensor).op)
            self.producers[key] = (self.prefix + producer.name, producer.type)

    def _saved_model(self, path, signature):
        tf = self.tf
        from tensorflow.core.protobuf import saved_model_pb2
        from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
        signature = signature or "serving_default"
        loaded = tf.saved_model.load(path)
        if signature not in loaded.signatures:
            raise ValueError(f"{path}: TensorFlow finds no signature '{signature}' (its signatures: "
                             f"{', '.join(sorted(loaded.signatures.keys()))})")
        function = loaded.signatures[signature]
        frozen = convert_variables_to_constants_v2(function, lower_control_flow=False)
        # Flattened, the signature's keyword inputs and its outputs come in their keys' order.
        input_keys = sorted(function.structured_input_signature[1])
        output_keys = sorted(function.structured_outputs)
        inputs = {key: tensor.name for key, tensor in zip(input_keys, frozen.inputs)}
        outputs = {key: tensor.name for key, tensor in zip(output_keys, frozen.outputs)}

        saved = saved_model_pb2.SavedModel()
        with open(os.path.join(path, "saved_model.pb"), "rb") as file:
            saved.ParseFromString(file.read())
        prefix = ""
        for meta_graph in saved.meta_graphs:
            if signature not in meta_graph.signature_def:
                continue
            calls = {node.name for node in meta_graph.graph_def.node if node.op in self.CALLS}
            callers = {info.name.split(":")[0] for info in meta_graph.signature_def[signature].outputs.values()}
            if len(callers) == 1 and callers <= calls:
                prefix = callers.pop() + "/"
            break
        return frozen.graph.as_graph_def(), inputs, outputs, prefix

    @staticmethod
    def _computing(operation):
        """The operation that computes what `operation` passes on through Identities."""
        while operation.type == "Identity" and operation.inputs:
            operation = operation.inputs[0].op
        return operation

    def tensor_of(self, name):
        if name in self.outputs:
            return self.outputs[name]
        if name in self.inputs:
            return self.inputs[name]
        if self.prefix:
            if not name.startswith(self.prefix):
                return None
            name = name[len(self.prefix):]
        tensor = name if ":" in name else name + ":0"
        operation, _, index = tensor.rpartition(":")
        try:
            found = self.graph.get_operation_by_name(operation)
        except (KeyError, ValueError):
            return None
        return tensor if index.isdigit() and int(index) < len(found.outputs) else None

    def fetch(self, tensors):
        return self.session.run(tensors, self.feed_dict)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    _framework_runner.serve(TensorFlowModel)
