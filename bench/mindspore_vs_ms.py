"""Estuary against MindSpore running the same MindIR on the CPU, and against ONNX Runtime on
MindSpore's own ONNX export, in one run on the same machine and thread count: median and p90
latency, peak RSS, and conversion time.

    python3 bench/mindspore_vs_ms.py                                  # every model, 2 threads
    python3 bench/mindspore_vs_ms.py --models resnet50 --threads 1 2 --rounds 5

Models (random weights, made in MindSpore's environment from python/tests/mindspore_models.py):
ResNet-50 and MobileNetV2 written with mindspore.nn at 224x224 (1000 classes, dynamic batch),
and nn.TransformerEncoder (4 layers, width 256, 4 heads, MLP 1024, GELU, 128 tokens, exported
for batch 1), batch 1. Engines, each in a fresh process that imports one engine:
  mindspore    MindSpore 2.10 (.venvs/mindspore): mindspore.load + nn.GraphCell in graph mode,
               device CPU, op threads set to the threads given
  onnxruntime  ONNX Runtime 1.30 on mindspore.export(..., file_format="ONNX") of the same net
  estuary      the MindIR converted by Estuary (`estuary convert`, O2), in the base .venv
Conversion time: `estuary convert` on the command line against MindSpore's ONNX export (a
fresh MindSpore process building the net and exporting it) plus ORT's session creation. The
engines alternate --rounds times per configuration; figures are medians over the rounds,
each ratio the median of the rounds' ratios.
"""
import os
import sys
import time

import bench_common as common

MODELS = ("resnet50", "mobilenet_v2", "encoder")
TESTS = os.path.join(common.ROOT, "python", "tests")


def build(name):
    """In MindSpore's environment: the net and its input shape (batch first)."""
    sys.path.insert(0, TESTS)
    import mindspore_models as zoo

    if name == "encoder":
        return zoo.Encoder(dim=256, heads=4, hidden=1024, layers=4), [1, 128, 256]
    net = zoo.ResNet50(classes=1000) if name == "resnet50" else zoo.MobileNetV2(classes=1000)
    return zoo.calibrated(net), [None, 3, 224, 224]


def start_mindspore(threads=None):
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    if threads:
        ms.device_context.cpu.op_tuning.threads_num(threads)
    return ms


def make_models(directory):
    """In MindSpore's environment: the MindIR files and their inputs."""
    import numpy as np

    ms = start_mindspore()
    for name in MODELS:
        ms.set_seed(0)
        net, shape = build(name)
        net.set_train(False)
        example = ms.Tensor(shape=shape, dtype=ms.float32) if shape[0] is None else ms.Tensor(np.zeros(shape, np.float32))
        ms.export(net, example, file_name=os.path.join(directory, name), file_format="MINDIR")
        x = np.random.default_rng(0).standard_normal([1] + shape[1:]).astype(np.float32)
        np.savez(os.path.join(directory, f"{name}.npz"), x=x)


def export_onnx(saved, onnx_path):
    """In MindSpore's environment: MindSpore's ONNX export of the model `saved` names."""
    import numpy as np

    ms = start_mindspore()
    ms.set_seed(0)
    net, shape = build(os.path.basename(saved))
    net.set_train(False)
    ms.export(net, ms.Tensor(np.zeros([1] + shape[1:], np.float32)), file_name=onnx_path[:-len(".onnx")],
              file_format="ONNX")


def worker(args):
    import numpy as np

    x = np.load(args.inputs)["x"]
    started = time.perf_counter()
    ms = start_mindspore(args.threads)
    cell = ms.nn.GraphCell(ms.load(args.model + ".mindir"))
    tensor = ms.Tensor(x)
    common.report(lambda: cell(tensor).asnumpy(), time.perf_counter() - started, args)


COMPARISON = common.Comparison(
    bench=os.path.abspath(__file__), models=MODELS, framework="MindSpore", framework_env="mindspore",
    converter="MindSpore's ONNX export", converter_env=None, make_models=make_models, worker=worker,
    converter_command=lambda saved, onnx_path: [common.python_of("mindspore"), os.path.abspath(__file__),
                                                "--export-onnx", saved, onnx_path],
    estuary_source=lambda saved: saved + ".mindir")

if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--export-onnx":
        export_onnx(sys.argv[2], sys.argv[3])
    else:
        common.main(COMPARISON, __doc__)
