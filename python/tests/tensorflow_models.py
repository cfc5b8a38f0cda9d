"""Models built with TensorFlow 2.21 (random, seeded weights; nothing downloaded), saved the
ways users save them, with inputs and TensorFlow's own outputs: what test_tensorflow.py
converts with Estuary and compares. Run in TensorFlow's environment (python/envs):

    .venvs/tensorflow/bin/python python/tests/tensorflow_models.py OUT_DIR [NAME...]

For each model NAME: OUT_DIR/NAME/ (a SavedModel, from Keras' model.export), OUT_DIR/NAME.pb
(the serving function frozen with convert_variables_to_constants_v2), and
OUT_DIR/NAME.npz (inputs x_b<batch> and TensorFlow's outputs y_b<batch>, batches 1 and 3).
The MLP is also saved with tf.saved_model.save (OUT_DIR/mlp_saved/), whose variables reach
the serving function another way.
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
    return tf.keras.Model(inputs, tf.keras.layers.Dense(4)(hidden)), (16,)


def keras_application(constructor, size):
    def build():
        # Random weights; logits, not probabilities, so that the comparison sees the network.
        model = constructor(weights=None, input_shape=(size, size, 3), classifier_activation=None)
        return model, (size, size, 3)
    return build


MODELS = {
    "mlp": mlp,
    "resnet50": keras_application(tf.keras.applications.ResNet50, 64),
    "mobilenet_v2": keras_application(tf.keras.applications.MobileNetV2, 96),
    "efficientnet_b0": keras_application(tf.keras.applications.EfficientNetB0, 64),
}


def save(name, out_dir):
    tf.keras.utils.set_random_seed(0)
    model, shape = MODELS[name]()
    model.export(os.path.join(out_dir, name), verbose=False)
    if name == "mlp":
        tf.saved_model.save(model, os.path.join(out_dir, "mlp_saved"))
    spec = tf.TensorSpec((None,) + shape, tf.float32, name=model.inputs[0].name)
    frozen = convert_variables_to_constants_v2(tf.function(model).get_concrete_function(spec))
    tf.io.write_graph(frozen.graph.as_graph_def(), out_dir, f"{name}.pb", as_text=False)
    rng = np.random.default_rng(1)
    arrays = {}
    for batch in BATCHES:
        x = rng.standard_normal((batch,) + shape).astype(np.float32)
        arrays[f"x_b{batch}"] = x
        arrays[f"y_b{batch}"] = model(x).numpy()
    np.savez(os.path.join(out_dir, f"{name}.npz"), **arrays)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for model_name in sys.argv[2:] or MODELS:
        save(model_name, sys.argv[1])
