"""Estuary against Paddle Inference (its oneDNN backend on, its fastest CPU setting) and
against ONNX Runtime on paddle2onnx's conversion, on Paddle models saved by paddle.jit.save
(PIR programs), in one run on the same machine and thread count: median and p90 latency,
peak RSS, and conversion time.

    python3 bench/paddle_vs_inference.py                              # every model, 2 threads
    python3 bench/paddle_vs_inference.py --models resnet50 --threads 1 2 --rounds 5

Models (random weights, made in Paddle's environment): paddle.vision ResNet50 and MobileNetV2
at 224x224, and a paddle.nn.TransformerEncoder (4 layers, width 256, 4 heads, MLP 1024, 128
tokens), batch 1. Engines, each in a fresh process that imports one engine:
  paddle       Paddle Inference 3.3.1 (.venvs/paddle), enable_mkldnn, the threads given
  onnxruntime  ONNX Runtime 1.30 on `paddle2onnx --opset_version 17`
  estuary      the program converted by Estuary (`estuary convert`, O2), in the base .venv
Conversion time: `estuary convert` on the command line against paddle2onnx plus ORT's
session creation. The engines alternate --rounds times per configuration; figures are
medians over the rounds, each ratio the median of the rounds' ratios. paddle2onnx lives in
.venvs/paddle2onnx (bench/envs/paddle2onnx.txt), made here on first use.
"""
import os
import time

import bench_common as common

MODELS = ("resnet50", "mobilenet_v2", "encoder")


def make_models(directory):
    """In Paddle's environment: the PIR programs and their inputs."""
    import numpy as np
    import paddle
    from paddle.static import InputSpec

    def encoder():
        layer = paddle.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0)
        return paddle.nn.TransformerEncoder(layer, num_layers=4), [None, 128, 256]

    builders = {
        "resnet50": lambda: (paddle.vision.models.resnet50(), [None, 3, 224, 224]),
        "mobilenet_v2": lambda: (paddle.vision.models.mobilenet_v2(), [None, 3, 224, 224]),
        "encoder": encoder,
    }
    for name, build in builders.items():
        paddle.seed(0)
        model, shape = build()
        model.eval()
        paddle.jit.save(model, os.path.join(directory, name, "inference"), input_spec=[InputSpec(shape, "float32", "x")])
        x = np.random.default_rng(0).standard_normal([1] + shape[1:]).astype(np.float32)
        np.savez(os.path.join(directory, f"{name}.npz"), x=x)


def worker(args):
    import numpy as np
    import paddle.inference as inference

    x = np.load(args.inputs)["x"]
    started = time.perf_counter()
    config = inference.Config(os.path.join(args.model, "inference.json"), os.path.join(args.model, "inference.pdiparams"))
    config.disable_gpu()
    config.enable_mkldnn()
    config.set_cpu_math_library_num_threads(args.threads)
    predictor = inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(x.shape)
    output = predictor.get_output_handle(predictor.get_output_names()[0])

    def run():
        handle.copy_from_cpu(x)
        predictor.run()
        return output.copy_to_cpu()

    common.report(run, time.perf_counter() - started, args)


COMPARISON = common.Comparison(
    bench=os.path.abspath(__file__), models=MODELS, framework="Paddle Inference", framework_env="paddle",
    converter="paddle2onnx", converter_env="paddle2onnx", make_models=make_models, worker=worker,
    converter_command=lambda saved, onnx_path: [
        os.path.join(common.ENVS, "paddle2onnx", "bin", "paddle2onnx"), "--model_dir", saved, "--model_filename",
        "inference.json", "--params_filename", "inference.pdiparams", "--save_file", onnx_path,
        "--opset_version", "17"],
    estuary_source=lambda saved: os.path.join(saved, "inference.json"))

if __name__ == "__main__":
    common.main(COMPARISON, __doc__)
