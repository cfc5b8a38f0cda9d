"""TensorFlow 2 functions run by Estuary in the same process: TF Adapter's graph mode.

    import estuary.tensorflow
    fast = estuary.tensorflow.function(keras_model)       # or a tf.function with an input_signature
    y = fast(x)                                            # NumPy arrays or tf.Tensors in and out

`function` traces the model (or takes the tf.function's concrete function) and hands its
graph and the values it captures to the C++ frontend "tensorflow" in memory, without a
file: the GraphDef TensorFlow holds, and each captured variable's current value wrapped
where NumPy holds it. The graph is optimized with the O2 pipeline and built by the GE
backend. The variables are read when `function` is called; call it again after they change.

Inputs keep the signature's dtypes; a dim the signature leaves unknown (None) stays
symbolic, so one function runs any batch size.
"""
import numpy as _np

from .. import Model as _Model
from .. import _estuary


def function(fn, input_signature=None, *, threads=0, pipeline="O2", extensions=None):
    """A callable running `fn` with Estuary.

    fn: a Keras model, a tf.function, or a concrete function. input_signature: tf.TensorSpecs
    for the arguments, needed for a tf.function made without one (a Keras model's comes from
    its inputs). threads: intra-op threads (0: one per core). extensions: {op: function(node)}
    translations of ops Estuary lacks (docs/frontends.md).
    """
    import tensorflow as tf

    concrete = _concrete_function(tf, fn, input_signature)
    name = getattr(fn, "name", None) or getattr(fn, "__name__", None) or concrete.name
    return Function(tf, concrete, name=str(name), threads=threads, pipeline=pipeline, extensions=extensions)


class Function:
    """A concrete function translated and built by Estuary; call it like the function."""

    def __init__(self, tf, concrete, *, name, threads, pipeline, extensions):
        self._tf = tf
        graph = concrete.graph
        captured = {internal.name for _, internal in graph.captures}
        arguments = [tensor for tensor in graph.inputs if tensor.name not in captured]
        self._structure = concrete.structured_outputs
        flat_structure = tf.nest.flatten(self._structure, expand_composites=True)
        if len(flat_structure) != len(graph.outputs):
            raise ValueError(f"tf.function '{concrete.name}' returns {len(graph.outputs)} tensors for "
                             f"{len(flat_structure)} outputs")
        self.name = name
        self.input_names = [tensor.op.name for tensor in arguments]
        self.output_names = _output_names(tf, self._structure, len(graph.outputs))
        self.graph = _estuary.tf.translate(
            self.name, graph.as_graph_def().SerializeToString(),
            [(tensor.name, name) for tensor, name in zip(arguments, self.input_names)],
            [(tensor.name, name) for tensor, name in zip(graph.outputs, self.output_names)],
            _captured_values(concrete), extensions)
        self.graph.optimize(pipeline)
        self.model = _Model(self.graph, threads)

    def __call__(self, *args):
        tf = self._tf
        flat = tf.nest.flatten(args)
        if len(flat) != len(self.input_names):
            raise TypeError(f"{self.name} takes {len(self.input_names)} inputs ({', '.join(self.input_names)}), "
                            f"{len(flat)} were given")
        as_tensors = any(isinstance(value, tf.Tensor) for value in flat)
        arrays = [value.numpy() if isinstance(value, tf.Tensor) else _np.asarray(value) for value in flat]
        outputs = self.model.run(arrays)
        if as_tensors:
            outputs = [tf.constant(output) for output in outputs]
        return tf.nest.pack_sequence_as(self._structure, outputs, expand_composites=True)


def _concrete_function(tf, fn, input_signature):
    if isinstance(fn, tf.keras.Model):
        if input_signature is None:
            input_signature = [tf.TensorSpec((None,) + tuple(tensor.shape[1:]), tensor.dtype, name=tensor.name)
                               for tensor in fn.inputs]
        traced = tf.function(fn)
        return traced.get_concrete_function(*input_signature) if len(input_signature) > 1 else \
            traced.get_concrete_function(input_signature[0])
    if hasattr(fn, "graph") and hasattr(fn, "captured_inputs"):
        return fn  # already a concrete function
    if not hasattr(fn, "get_concrete_function"):
        raise TypeError(f"estuary.tensorflow.function takes a Keras model, a tf.function or a concrete function, "
                        f"not {type(fn).__name__}")
    if input_signature is not None:
        return fn.get_concrete_function(*input_signature)
    if getattr(fn, "input_signature", None) is None:
        raise TypeError(f"tf.function '{getattr(fn, '__name__', fn)}' has no input_signature: give one "
                        f"(input_signature=[tf.TensorSpec(...), ...])")
    return fn.get_concrete_function()


def _captured_values(concrete):
    """(Placeholder name, NumPy array) for each value the function captures: a variable's
    current value, or an eager constant."""
    variables = {id(variable.handle): variable for variable in concrete.variables}
    values = []
    for external, internal in concrete.graph.captures:
        variable = variables.get(id(external))
        if variable is not None:
            value = variable.numpy()
        elif hasattr(external, "numpy") and external.dtype.name != "resource":
            value = external.numpy()
        else:
            raise TypeError(f"tf.function '{concrete.name}' captures '{internal.name}', a {external.dtype.name} "
                            f"that is not a variable; Estuary takes variables and constants")
        values.append((internal.op.name, _np.ascontiguousarray(value)))
    return values


def _output_names(tf, structure, count):
    if isinstance(structure, dict):
        return [str(key) for key in sorted(structure)]  # tf.nest flattens dicts by sorted key
    return [f"output_{i}" for i in range(count)]
