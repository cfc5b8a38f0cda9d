"""ONNX Runtime's latency on the synthetic CNNs of cnn_graphs.h (same architectures, random
He-scaled weights, Conv -> BatchNormalization as exported models have them), to set beside
`cnn_bench`'s figures for Estuary. Needs the `onnx` and `onnxruntime` packages.

    python3 bench/ort_cnn.py --model resnet50 --batch 1 --threads 2 [--seconds 3] [--save model.onnx] [--spin]
"""

import argparse
import statistics
import time

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed=1):
        self.nodes, self.initializers, self.random, self.count = [], [], np.random.default_rng(seed), 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def constant(self, array):
        name = self.name("w")
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def op(self, op_type, inputs, **attrs):
        output = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [output], **attrs))
        return output

    def conv_bn(self, x, channels_in, channels_out, kernel, stride, group=1):
        fan_in = channels_in // group * kernel * kernel
        w = self.random.normal(0, np.sqrt(2 / fan_in), (channels_out, channels_in // group, kernel, kernel))
        pad = kernel // 2
        y = self.op("Conv", [x, self.constant(w)], pads=[pad] * 4, strides=[stride] * 2, group=group)
        stats = [self.random.normal(1, 0.2, channels_out), self.random.normal(0, 0.1, channels_out),
                 self.random.normal(0, 0.1, channels_out), self.random.uniform(0.5, 1.5, channels_out)]
        return self.op("BatchNormalization", [y] + [self.constant(s) for s in stats])

    def relu6(self, x):
        return self.op("Clip", [x, self.constant(np.array(0.0)), self.constant(np.array(6.0))])

    def classifier(self, x, features, classes=1000):
        pooled = self.op("Flatten", [self.op("GlobalAveragePool", [x])])
        w = self.random.normal(0, np.sqrt(1 / features), (classes, features))
        return self.op("Gemm", [pooled, self.constant(w), self.constant(self.random.normal(0, 0.1, classes))],
                       transB=1)


def resnet50(b):
    x = b.op("MaxPool", [b.op("Relu", [b.conv_bn("image", 3, 64, 7, 2)])], kernel_shape=[3, 3], strides=[2, 2],
             pads=[1] * 4)
    channels = 64
    for stage, (width, blocks) in enumerate(zip([64, 128, 256, 512], [3, 4, 6, 3])):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            y = b.op("Relu", [b.conv_bn(x, channels, width, 1, 1)])
            y = b.op("Relu", [b.conv_bn(y, width, width, 3, stride)])
            y = b.conv_bn(y, width, width * 4, 1, 1)
            shortcut = b.conv_bn(x, channels, width * 4, 1, stride) if block == 0 else x
            x = b.op("Relu", [b.op("Add", [y, shortcut])])
            channels = width * 4
    return b.classifier(x, channels)


def mobilenet_v2(b):
    x = b.relu6(b.conv_bn("image", 3, 32, 3, 2))
    channels = 32
    for expand, out, repeats, first_stride in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                                                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(repeats):
            stride, hidden = (first_stride if i == 0 else 1), channels * expand
            y = x if expand == 1 else b.relu6(b.conv_bn(x, channels, hidden, 1, 1))
            y = b.relu6(b.conv_bn(y, hidden, hidden, 3, stride, group=hidden))
            y = b.conv_bn(y, hidden, out, 1, 1)
            x = b.op("Add", [x, y]) if stride == 1 and channels == out else y
            channels = out
    x = b.relu6(b.conv_bn(x, channels, 1280, 1, 1))
    return b.classifier(x, 1280)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["resnet50", "mobilenetv2"], default="resnet50")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--save", help="also write the ONNX model here")
    parser.add_argument("--spin", dest="passive", action="store_false",
                        help="let idle workers spin (ONNX Runtime's default; fastest on a quiet machine)")
    args = parser.parse_args()

    b = Builder()
    logits = (resnet50 if args.model == "resnet50" else mobilenet_v2)(b)
    graph = helper.make_graph(
        b.nodes, args.model,
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info(logits, TensorProto.FLOAT, ["batch", 1000])], b.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    if args.save:
        onnx.save(model, args.save)

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Workers that spin collapse on a shared machine; Estuary is timed with OMP_WAIT_POLICY=passive.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0" if args.passive else "1")
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    image = np.random.default_rng(5).standard_normal((args.batch, 3, 224, 224)).astype(np.float32)
    for _ in range(3):
        session.run(None, {"image": image})
    samples, start = [], time.perf_counter()
    while time.perf_counter() - start < args.seconds or len(samples) < 5:
        before = time.perf_counter()
        session.run(None, {"image": image})
        samples.append(time.perf_counter() - before)
    print(f"| ONNX Runtime {onnxruntime.__version__} | {args.model} | {args.batch} | {args.threads} | "
          f"{statistics.median(samples) * 1e3:.3f} |")


if __name__ == "__main__":
    main()
