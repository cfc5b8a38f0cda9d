"""Models built with TensorFlow 2.21 (random, seeded weights; nothing downloaded), saved the
ways users save them, with inputs and TensorFlow's own outputs: what test_tensorflow.py
converts with Estuary and compares. Run in TensorFlow's environment (python/envs):

    .venvs/tensorflow/bin/python python/tests/tensorflow_models.py OUT_DIR [NAME...]

For each model NAME, what applies of:
  OUT_DIR/NAME/                 a SavedModel (Keras' model.export, or tf.saved_model.save)
  OUT_DIR/NAME.pb               the serving function frozen with convert_variables_to_constants_v2,
                                which lowers control flow to TF 1's Switch/Merge/Enter/Exit
  OUT_DIR/NAME_functional.pb    frozen with lower_control_flow=False: functional While and If
  OUT_DIR/NAME.npz              inputs x_b<batch> and TensorFlow's outputs y_b<batch>, batches 1 and 3
The MLP is also saved with tf.saved_model.save (OUT_DIR/mlp_saved/), whose variables reach
the serving function another way. tf1_graph is a TF 1-style graph (placeholders, variables,
tf.compat.v1 cond and while_loop in TF 1 control flow) frozen to a .pb only; bad_graphs
writes broken GraphDefs for the error tests.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

BATCHES = (1, 3)


def mlp():
    inputs = tf.keras.Input((16,), name="features")
    hidden = tf.keras.layers.Dense(32, activation="relu")(inputs)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(4)(hidden)), (16,), (16,)


def keras_application(constructor, size):
    def build():
        # Random weights; logits, not probabilities, so that the comparison sees the network.
        model = constructor(weights=None, input_shape=(size, size, 3), classifier_activation=None)
        return model, (size, size, 3), (size, size, 3)
    return build


def encoder():
    """Two Keras transformer encoder blocks over a sequence of any length."""
    tokens = tf.keras.Input((None, 64), name="tokens")
    hidden = tokens
    for _ in range(2):
        attended = tf.keras.layers.MultiHeadAttention(num_heads=4, key_dim=16)(hidden, hidden)
        hidden = tf.keras.layers.LayerNormalization(epsilon=1e-6)(hidden + attended)
        feed = tf.keras.layers.Dense(128, activation="gelu")(hidden)
        hidden = tf.keras.layers.LayerNormalization(epsilon=1e-6)(hidden + tf.keras.layers.Dense(64)(feed))
    return tf.keras.Model(tokens, hidden), (None, 64), (10, 64)


class RMSNorm(tf.keras.layers.Layer):
    """RMSNorm as TF-written LLMs write it (KerasHub's Llama): x * rsqrt(mean(x^2) + eps) * scale."""

    def __init__(self, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="random_normal", name="scale")

    def call(self, x):
        variance = tf.reduce_mean(tf.pow(x, 2.0), axis=-1, keepdims=True)
        return x * tf.math.rsqrt(variance + self.epsilon) * self.scale


def decoder():
    """Two pre-norm LLM decoder blocks (causal attention, SiLU MLP, RMSNorm), then a final
    RMSNorm: each residual sum feeds the next RMSNorm (four Add + RMSNorm sites)."""
    tokens = tf.keras.Input((None, 64), name="hidden")
    hidden = tokens
    for _ in range(2):
        normed = RMSNorm()(hidden)
        attended = tf.keras.layers.MultiHeadAttention(num_heads=4, key_dim=16)(normed, normed, use_causal_mask=True)
        hidden = hidden + attended
        feed = tf.keras.layers.Dense(128, activation="silu")(RMSNorm()(hidden))
        hidden = hidden + tf.keras.layers.Dense(64)(feed)
    return tf.keras.Model(tokens, RMSNorm()(hidden)), (None, 64), (9, 64)


def recurrent():
    """A Keras LSTM returning sequences under a GRU, over a sequence of any length."""
    sequence = tf.keras.Input((None, 8), name="sequence")
    hidden = tf.keras.layers.LSTM(16, return_sequences=True)(sequence)
    hidden = tf.keras.layers.GRU(16)(hidden)
    return tf.keras.Model(sequence, tf.keras.layers.Dense(3)(hidden)), (None, 8), (7, 8)


class Stepper(tf.Module):
    """tf.while_loop and tf.cond in a tf.function: a cond inside a counted loop, a loop whose
    condition depends on the data, and a cond on the input."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w = tf.Variable(rng.standard_normal((8, 8)).astype(np.float32) * 0.4)

    @tf.function(input_signature=[tf.TensorSpec((None, 8), tf.float32, name="x")])
    def __call__(self, x):
        def step(i, h):
            h = tf.cond(tf.reduce_sum(h) > 0, lambda: tf.tanh(h @ self.w), lambda: tf.sigmoid(h @ self.w) - 0.25)
            return i + 1, h
        _, h = tf.while_loop(lambda i, h: i < 4, step, (tf.constant(0), x))
        _, grown = tf.while_loop(lambda n, g: tf.reduce_sum(tf.abs(g)) < 50.0,
                                 lambda n, g: (n + 1, g * 1.5 + 0.1), (tf.constant(0.0), h))
        return tf.cond(tf.reduce_mean(x) > 0, lambda: grown * 2.0, lambda: grown - h)


class Semantics(tf.Module):
    """TensorFlow ops whose semantics differ from ONNX's in the details: BatchMatMulV2
    broadcasting batch dims, StridedSlice with its five masks and a negative stride,
    padding=SAME split unevenly (stride 2 on an odd size), and a depthwise convolution."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.b = tf.Variable(rng.standard_normal((5, 4, 6)).astype(np.float32))
        self.kernel = tf.Variable(rng.standard_normal((3, 3, 3, 8)).astype(np.float32) * 0.3)
        self.depthwise = tf.Variable(rng.standard_normal((3, 3, 8, 2)).astype(np.float32) * 0.3)

    @tf.function(input_signature=[tf.TensorSpec((None, 7, 9, 3), tf.float32, name="image")])
    def __call__(self, image):
        conv = tf.nn.conv2d(image, self.kernel, strides=2, padding="SAME")           # [n, 4, 5, 8]
        deep = tf.nn.depthwise_conv2d(conv, self.depthwise, [1, 1, 1, 1], "SAME")     # [n, 4, 5, 16]
        a = tf.reshape(deep[:, :, :4, :12], (-1, 1, 3, 4 * 4 * 4))[..., :4]         # [n, 1, 3, 4]
        product = tf.matmul(a, self.b)                                                # [n, 5, 3, 6]
        sliced = product[:, ::-2, tf.newaxis, 1:, -1]                                 # [n, 3, 1, 2]
        return tf.reduce_sum(sliced, axis=[2, 3]) + tf.reduce_mean(deep[..., 3::4], axis=[1, 2, 3])[:, None]


def semantics():
    return Semantics(), (7, 9, 3), (7, 9, 3)


def control_flow():
    # Batch 1 takes the final cond's true branch, batch 3 its false one.
    return Stepper(), (8,), (8,)


def control_flow_inputs(batch, rng):
    x = np.abs(rng.standard_normal((batch, 8))).astype(np.float32)
    return x if batch == 1 else -x


MODELS = {
    "mlp": mlp,
    "resnet50": keras_application(tf.keras.applications.ResNet50, 64),
    "mobilenet_v2": keras_application(tf.keras.applications.MobileNetV2, 96),
    "efficientnet_b0": keras_application(tf.keras.applications.EfficientNetB0, 64),
    "encoder": encoder,
    "decoder": decoder,
    "recurrent": recurrent,
    "control_flow": control_flow,
    "semantics": semantics,
}
INPUTS = {"control_flow": control_flow_inputs}
# Models whose frozen graph has control flow, also frozen with it kept functional.
WITH_CONTROL_FLOW = {"recurrent", "control_flow"}


def write_graph(graph_def, out_dir, name):
    tf.io.write_graph(graph_def, out_dir, name, as_text=False)


def save(name, out_dir):
    tf.keras.utils.set_random_seed(0)
    model, shape, sample = MODELS[name]()
    if isinstance(model, tf.keras.Model):
        model.export(os.path.join(out_dir, name), verbose=False)
        spec = tf.TensorSpec((None,) + shape, tf.float32, name=model.inputs[0].name)
        function = tf.function(model).get_concrete_function(spec)
    else:
        tf.saved_model.save(model, os.path.join(out_dir, name), signatures=model.__call__)
        function = model.__call__.get_concrete_function()
    if name == "mlp":
        tf.saved_model.save(model, os.path.join(out_dir, "mlp_saved"))
    write_graph(convert_variables_to_constants_v2(function).graph.as_graph_def(), out_dir, f"{name}.pb")
    if name in WITH_CONTROL_FLOW:
        functional = convert_variables_to_constants_v2(function, lower_control_flow=False)
        write_graph(functional.graph.as_graph_def(), out_dir, f"{name}_functional.pb")
    rng = np.random.default_rng(1)
    arrays = {}
    for batch in BATCHES:
        make = INPUTS.get(name, lambda b, r: r.standard_normal((b,) + sample).astype(np.float32))
        x = make(batch, rng)
        arrays[f"x_b{batch}"] = x
        arrays[f"y_b{batch}"] = model(x).numpy()
    np.savez(os.path.join(out_dir, f"{name}.npz"), **arrays)


def save_tf1_graph(out_dir):
    """A TF 1-style graph: placeholders, variables, a convolution with FusedBatchNormV3, and
    tf.compat.v1 cond and while_loop in TF 1 control flow, frozen with graph_util."""
    v1 = tf.compat.v1
    v1.disable_control_flow_v2()
    graph = tf.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        v1.set_random_seed(0)
        x = v1.placeholder(tf.float32, (None, 4, 4, 2), name="x")
        kernel = v1.get_variable("kernel", initializer=rng.standard_normal((3, 3, 2, 4)).astype(np.float32) * 0.3)
        conv = tf.nn.conv2d(x, kernel, strides=1, padding="SAME")
        scale, offset, mean, variance = (v1.get_variable(n, initializer=rng.uniform(0.5, 1.5, 4).astype(np.float32))
                                         for n in ("scale", "offset", "mean", "variance"))
        normed, _, _ = v1.nn.fused_batch_norm(conv, scale, offset, mean, variance, epsilon=1e-3, is_training=False)
        h = tf.reshape(tf.nn.relu(normed), (-1, 64))
        w = v1.get_variable("w", initializer=rng.standard_normal((64, 64)).astype(np.float32) * 0.1)

        def step(i, h):
            h = v1.cond(tf.reduce_sum(h) > 0, lambda: tf.tanh(tf.matmul(h, w)), lambda: tf.nn.relu(h) - 0.1)
            return i + 1, h
        _, h = v1.while_loop(lambda i, h: i < 3, step, [tf.constant(0), h])
        y = tf.identity(v1.cond(tf.reduce_mean(x) > 0, lambda: h * 2.0, lambda: h + 1.0), name="y")
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            frozen = v1.graph_util.convert_variables_to_constants(session, graph.as_graph_def(), ["y"])
            arrays = {}
            for batch in BATCHES:
                sample = np.abs(rng.standard_normal((batch, 4, 4, 2))).astype(np.float32)
                arrays[f"x_b{batch}"] = sample if batch == 1 else -sample
                arrays[f"y_b{batch}"] = session.run(y, {x: arrays[f"x_b{batch}"]})
    ops = {node.op for node in frozen.node}
    assert {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "FusedBatchNormV3"} <= ops, ops
    write_graph(frozen, out_dir, "tf1_graph.pb")
    np.savez(os.path.join(out_dir, "tf1_graph.npz"), **arrays)


def save_bad_graphs(out_dir):
    """GraphDefs that are wrong in one way each, for the error tests: a cycle, an input no
    node makes, ops Estuary has no translation for, and a TF 1 loop without its
    NextIteration."""
    v1 = tf.compat.v1
    v1.disable_control_flow_v2()
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, (None, 4), name="x")
        added = tf.add(x, 1.0, name="added")
        tf.multiply(added, 2.0, name="doubled")
        tf.identity(tf.math.lgamma(tf.math.digamma(x, name="digamma"), name="lgamma"), name="special")
        _, looped = v1.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, h * 2.0), [tf.constant(0), x], name="loop")
        tf.identity(looped, name="looped")
    graph_def = graph.as_graph_def()

    def variant(file_name, outputs, change=None):
        bad = v1.graph_util.extract_sub_graph(graph_def, outputs)
        nodes = {node.name: node for node in bad.node}
        if change:
            change(nodes)
        write_graph(bad, out_dir, file_name)

    def cycle(nodes):
        nodes["added"].input[0] = "doubled"

    def dangling(nodes):
        nodes["added"].input[0] = "nowhere:0"

    def no_next_iteration(nodes):
        merge = next(node for name, node in nodes.items() if node.op == "Merge" and "loop/Merge_1" in name)
        merge.input[1] = "loop/mul"

    variant("cycle.pb", ["doubled"], cycle)
    variant("dangling.pb", ["doubled"], dangling)
    variant("unsupported.pb", ["special"])
    variant("broken_loop.pb", ["looped"], no_next_iteration)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    # The TF 1 graphs last: they turn TF 2 control flow off for the process.
    TF1 = {"tf1_graph": save_tf1_graph, "bad_graphs": save_bad_graphs}
    for model_name in sorted(sys.argv[2:] or [*MODELS, *TF1], key=lambda n: n in TF1):
        TF1.get(model_name, lambda out_dir: save(model_name, out_dir))(sys.argv[1])
