"""Estuary against TensorFlow itself and against ONNX Runtime on tf2onnx's conversion, on Keras
models saved as SavedModels, in one run on the same machine and thread count: median and p90
latency, peak RSS, and conversion time.

    python3 bench/tensorflow_vs_tf.py                                 # every model, 2 threads
    python3 bench/tensorflow_vs_tf.py --models resnet50 --threads 1 2 --rounds 5

Models (random weights, made in TensorFlow's environment): Keras ResNet50 and MobileNetV2 at
224x224, and a BERT-style encoder (4 layers, width 256, 4 heads, MLP 1024, 128 tokens), batch 1.
Engines, each measured in a fresh process that imports one engine, so that peak RSS is its own:
  tensorflow   the SavedModel's serving signature in TensorFlow 2.21 (.venvs/tensorflow)
  onnxruntime  ONNX Runtime 1.30 on `python -m tf2onnx.convert --saved-model` (opset 17)
  estuary      the SavedModel converted by Estuary (`estuary convert`, O2), in the base .venv
Conversion time: `estuary convert` on the command line (a fresh process: import, translate,
optimize, build, write the .eom) against `python -m tf2onnx.convert` plus ORT's session
creation. The engines alternate --rounds times per configuration; figures are medians over
the rounds and each ratio the median of the rounds' ratios. tf2onnx lives in .venvs/tf2onnx
(bench/envs/tf2onnx.txt), made here on first use.
"""
import os
import time

import bench_common as common

MODELS = ("resnet50", "mobilenet_v2", "encoder")


def make_models(directory):
    """In TensorFlow's environment: the SavedModels and their inputs."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    def encoder():
        tokens = tf.keras.Input((None, 256), name="tokens")
        hidden = tokens
        for _ in range(4):
            attended = tf.keras.layers.MultiHeadAttention(num_heads=4, key_dim=64)(hidden, hidden)
            hidden = tf.keras.layers.LayerNormalization(epsilon=1e-6)(hidden + attended)
            feed = tf.keras.layers.Dense(1024, activation="gelu")(hidden)
            hidden = tf.keras.layers.LayerNormalization(epsilon=1e-6)(hidden + tf.keras.layers.Dense(256)(feed))
        return tf.keras.Model(tokens, hidden), (128, 256)

    builders = {
        "resnet50": lambda: (tf.keras.applications.ResNet50(weights=None, classifier_activation=None), (224, 224, 3)),
        "mobilenet_v2": lambda: (tf.keras.applications.MobileNetV2(weights=None, classifier_activation=None),
                                 (224, 224, 3)),
        "encoder": encoder,
    }
    for name, build in builders.items():
        tf.keras.utils.set_random_seed(0)
        model, shape = build()
        model.export(os.path.join(directory, name), verbose=False)
        x = np.random.default_rng(0).standard_normal((1,) + shape).astype(np.float32)
        np.savez(os.path.join(directory, f"{name}.npz"), x=x)


def worker(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    x = np.load(args.inputs)["x"]
    started = time.perf_counter()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    serve = tf.saved_model.load(args.model).signatures["serving_default"]
    (key,) = serve.structured_input_signature[1].keys()
    tensor = tf.constant(x)
    common.report(lambda: serve(**{key: tensor}), time.perf_counter() - started, args)


COMPARISON = common.Comparison(
    bench=os.path.abspath(__file__), models=MODELS, framework="TF", framework_env="tensorflow",
    converter="tf2onnx", converter_env="tf2onnx", make_models=make_models, worker=worker,
    converter_command=lambda saved, onnx_path: [common.python_of("tf2onnx"), "-m", "tf2onnx.convert",
                                                "--saved-model", saved, "--output", onnx_path, "--opset", "17"],
    estuary_source=lambda saved: saved)

if __name__ == "__main__":
    common.main(COMPARISON, __doc__)
