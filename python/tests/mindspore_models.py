"""Models built with MindSpore (random, seeded weights; nothing downloaded), exported with
mindspore.export(..., file_format="MINDIR"), with inputs and the outputs of MindSpore's own
run of each exported file (mindspore.load + nn.GraphCell): what test_mindspore.py converts
with Estuary and compares. Runs in MindSpore's environment (python/envs/mindspore.txt):

    .venvs/mindspore/bin/python python/tests/mindspore_models.py OUT_DIR [NAME...]

For each model NAME: OUT_DIR/NAME.mindir (the split model: OUT_DIR/split_graph.mindir and
OUT_DIR/split_variables/, and two damaged copies of its graph, wrong_size.mindir and
no_data.mindir) and OUT_DIR/NAME.npz (inputs x_b<batch> and MindSpore's outputs
y_b<batch>). Models are exported with a dynamic batch and run at batches 1 and 3, except
nn.TransformerEncoder: its Python shape checks become `raise` nodes that MindSpore 2.10
cannot load back with a dynamic batch, so it is exported for batch 2. The vision models
take `--size` (64 for the tests; the benchmark exports them at 224).
"""
import argparse
import os
import sys

import numpy as np
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import Parameter, Tensor

BATCHES = (1, 3)
STATIC_BATCH = {"encoder": 2}


def conv_bn(cin, cout, kernel, stride=1, groups=1, activation=nn.ReLU):
    layers = [nn.Conv2d(cin, cout, kernel, stride, pad_mode="pad", padding=kernel // 2, group=groups, has_bias=False),
              nn.BatchNorm2d(cout)]
    if activation is not None:
        layers.append(activation())
    return nn.SequentialCell(layers)


class Bottleneck(nn.Cell):
    def __init__(self, cin, width, stride):
        super().__init__()
        self.body = nn.SequentialCell([conv_bn(cin, width, 1), conv_bn(width, width, 3, stride),
                                       conv_bn(width, width * 4, 1, activation=None)])
        self.project = stride != 1 or cin != width * 4
        self.shortcut = conv_bn(cin, width * 4, 1, stride, activation=None) if self.project else nn.Identity()
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.body(x) + self.shortcut(x))


class ResNet50(nn.Cell):
    """ResNet-50 as MindSpore's model zoo writes it: a 7x7 stem, a 'same' max pool, bottleneck
    stages of 3, 4, 6 and 3 blocks, a mean over the spatial dims and a Dense head."""

    def __init__(self, classes=10):
        super().__init__()
        layers = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, pad_mode="same")]
        cin = 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.features = nn.SequentialCell(layers)
        self.head = nn.Dense(cin, classes)

    def construct(self, x):
        return self.head(self.features(x).mean((2, 3)))


class InvertedResidual(nn.Cell):
    def __init__(self, cin, cout, stride, expansion):
        super().__init__()
        hidden = cin * expansion
        layers = [] if expansion == 1 else [conv_bn(cin, hidden, 1, activation=nn.ReLU6)]
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden, activation=nn.ReLU6),
                   conv_bn(hidden, cout, 1, activation=None)]
        self.body = nn.SequentialCell(layers)
        self.residual = stride == 1 and cin == cout

    def construct(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Cell):
    """MobileNetV2: depthwise 3x3 convolutions (group = channels), ReLU6, inverted residuals."""

    def __init__(self, classes=10):
        super().__init__()
        layers = [conv_bn(3, 32, 3, 2, activation=nn.ReLU6)]
        cin = 32
        for expansion, cout, repeats, stride in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                                                 (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
            for i in range(repeats):
                layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expansion))
                cin = cout
        layers.append(conv_bn(cin, 1280, 1, activation=nn.ReLU6))
        self.features = nn.SequentialCell(layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Dense(1280, classes)

    def construct(self, x):
        return self.head(ops.flatten(self.pool(self.features(x))))


def calibrated(model):
    """Batch norms with random statistics and affine parameters, so that the network's
    outputs are far from zero and a comparison sees every layer."""
    rng = np.random.default_rng(0)
    for _, cell in model.cells_and_names():
        if isinstance(cell, nn.BatchNorm2d):
            channels = cell.moving_mean.shape[0]
            cell.moving_mean.set_data(Tensor(rng.normal(0, 0.1, channels).astype(np.float32)))
            cell.moving_variance.set_data(Tensor(rng.uniform(0.5, 1.5, channels).astype(np.float32)))
            cell.gamma.set_data(Tensor(rng.uniform(0.5, 1.5, channels).astype(np.float32)))
            cell.beta.set_data(Tensor(rng.normal(0, 0.1, channels).astype(np.float32)))
    return model


class RMSNorm(nn.Cell):
    """RMSNorm as LLaMA code writes it: x * rsqrt(mean(x * x) + eps) * weight."""

    def __init__(self, dim, epsilon=1e-6):
        super().__init__()
        self.epsilon = epsilon
        self.weight = Parameter(Tensor(np.random.default_rng(dim).normal(1.0, 0.1, dim).astype(np.float32)))

    def construct(self, x):
        return x * ops.rsqrt((x * x).mean(-1, keep_dims=True) + self.epsilon) * self.weight


class Decoder(nn.Cell):
    """A LLaMA-style pre-norm decoder block: rotary embeddings, causal attention, a SiLU-gated
    MLP, and the final norm."""

    def __init__(self, dim=64, heads=4, hidden=128, tokens=16):
        super().__init__()
        self.heads, self.head_dim, self.tokens = heads, dim // heads, tokens
        self.attention_norm = RMSNorm(dim)
        self.qkv = nn.Dense(dim, 3 * dim, has_bias=False)
        self.out = nn.Dense(dim, dim, has_bias=False)
        self.mlp_norm = RMSNorm(dim)
        self.gate = nn.Dense(dim, hidden, has_bias=False)
        self.up = nn.Dense(dim, hidden, has_bias=False)
        self.down = nn.Dense(hidden, dim, has_bias=False)
        self.final_norm = RMSNorm(dim)
        half = self.head_dim // 2
        angles = np.arange(tokens)[:, None] / (10000.0 ** (np.arange(half) / half))[None, :]
        self.cos = Tensor(np.cos(np.concatenate([angles, angles], -1)).astype(np.float32))
        self.sin = Tensor(np.sin(np.concatenate([angles, angles], -1)).astype(np.float32))
        self.mask = Tensor(np.triu(np.full((tokens, tokens), -1e9, np.float32), 1))

    def rotate(self, t):
        half = self.head_dim // 2
        return t * self.cos + ops.cat((-t[..., half:], t[..., :half]), -1) * self.sin

    def construct(self, x):
        h = self.attention_norm(x)
        qkv = self.qkv(h).reshape(-1, self.tokens, 3, self.heads, self.head_dim).transpose(2, 0, 3, 1, 4)
        q, k, v = self.rotate(qkv[0]), self.rotate(qkv[1]), qkv[2]
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / float(np.sqrt(self.head_dim)) + self.mask
        attended = ops.matmul(ops.softmax(scores, -1), v).transpose(0, 2, 1, 3)
        x = x + self.out(attended.reshape(-1, self.tokens, self.heads * self.head_dim))
        h = self.mlp_norm(x)
        x = x + self.down(ops.silu(self.gate(h)) * self.up(h))
        return self.final_norm(x)


class Encoder(nn.Cell):
    """nn.TransformerEncoder: post-norm layers, multi-head attention, a GELU MLP."""

    def __init__(self, dim=64, heads=4, hidden=128, layers=2):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, hidden, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)

    def construct(self, x):
        return self.encoder(x)


class ControlFlow(nn.Cell):
    """A data-dependent if and a data-dependent while in construct (MindSpore writes them as
    Switch calls of sub-graphs, the while as tail recursion)."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(8, 8)

    def construct(self, x):
        y = self.dense(x)
        if x.mean() > 0:
            y = y * 2.0 + 1.0
        else:
            y = y - 3.0
        total = ops.zeros((1,), ms.float32)
        while total.sum() < ops.abs(y).sum():
            total = total + 1.5
        return y * total


class Shapes(nn.Cell):
    """Dims read from the input's shape: with a dynamic batch, MindSpore computes them in the
    graph (Shape, TupleGetItem, scalar arithmetic, MakeTuple) for the Reshapes."""

    def construct(self, x):
        batch, tokens, width = x.shape
        y = ops.softmax(x.reshape(batch, tokens * 2, width // 2), -1)
        return y.reshape(batch, -1) * float(width)


class LayerNormStatistics(nn.Cell):
    """All three results of ops.LayerNorm: MindSpore's CPU kernel returns the variance as the
    third, though its documentation calls it rstd."""

    def __init__(self):
        super().__init__()
        self.norm = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)
        self.gamma = Parameter(Tensor(np.linspace(0.5, 1.5, 24, dtype=np.float32)))
        self.beta = Parameter(Tensor(np.linspace(-0.2, 0.2, 24, dtype=np.float32)))

    def construct(self, x):
        y, mean, variance = self.norm(x * 3.0, self.gamma, self.beta)
        return (y + mean) * variance


class Split(nn.Cell):
    """A small MLP, exported in the split form MindSpore uses for models over 1 GiB."""

    def __init__(self):
        super().__init__()
        self.first = nn.Dense(32, 64)
        self.second = nn.Dense(64, 16)

    def construct(self, x):
        return self.second(ops.tanh(self.first(x)))


class Unsupported(nn.Cell):
    """Ops Estuary has no translation for (the census lists them all, with their nodes)."""

    def construct(self, x):
        return ops.erfinv(ops.tanh(x) * 0.5) + ops.lgamma(ops.abs(x) + 1.0)


def models(size):
    return {
        "resnet50": lambda: (calibrated(ResNet50()), [3, size, size]),
        "mobilenet_v2": lambda: (calibrated(MobileNetV2()), [3, size, size]),
        "encoder": lambda: (Encoder(), [16, 64]),  # batch STATIC_BATCH["encoder"]
        "decoder": lambda: (Decoder(), [16, 64]),
        "control_flow": lambda: (ControlFlow(), [8]),
        "shapes": lambda: (Shapes(), [16, 8]),
        "split": lambda: (Split(), [32]),
        "layer_norm_statistics": lambda: (LayerNormStatistics(), [5, 24]),
        "unsupported": lambda: (Unsupported(), [4]),
    }


def inputs(name, batch, shape, rng):
    x = rng.standard_normal([batch] + shape).astype(np.float32)
    if name == "control_flow":  # the if takes each branch once
        x = np.abs(x) if batch == 1 else -np.abs(x)
    return x


def damaged(out_dir):
    """Copies of the split model's graph file, rewritten with MindSpore's own mind_ir_pb2, in
    which a parameter holds its data in the file: one with four bytes too few, one with none."""
    from mindspore.train import mind_ir_pb2

    model = mind_ir_pb2.ModelProto()
    with open(os.path.join(out_dir, "split_graph.mindir"), "rb") as source:
        model.ParseFromString(source.read())
    parameter = model.graph.parameter[0]
    parameter.ClearField("external_data")
    parameter.raw_data = np.zeros(int(np.prod(parameter.dims)) - 1, np.float32).tobytes()
    with open(os.path.join(out_dir, "wrong_size.mindir"), "wb") as out:
        out.write(model.SerializeToString())
    parameter.ClearField("raw_data")
    with open(os.path.join(out_dir, "no_data.mindir"), "wb") as out:
        out.write(model.SerializeToString())


def export(name, out_dir, size):
    ms.set_seed(0)
    np.random.seed(0)
    model, shape = models(size)[name]()
    model.set_train(False)
    path = os.path.join(out_dir, name)
    static = STATIC_BATCH.get(name)
    example = Tensor(shape=[None] + shape, dtype=ms.float32) if static is None else \
        Tensor(np.zeros([static] + shape, np.float32))
    if name == "split":
        import mindspore.train.serialization as serialization

        saved, serialization.TOTAL_SAVE = serialization.TOTAL_SAVE, 0  # as if the parameters were over 1 GiB
        try:
            ms.export(model, example, file_name=path, file_format="MINDIR")
        finally:
            serialization.TOTAL_SAVE = saved
        path += "_graph"
    else:
        ms.export(model, example, file_name=path, file_format="MINDIR")
    if name == "split":
        damaged(out_dir)
    if name == "unsupported":
        return
    rng = np.random.default_rng(1)
    arrays = {}
    for batch in BATCHES if static is None else (static,):
        x = inputs(name, batch, shape, rng)
        arrays[f"x_b{batch}"] = x
        # A GraphCell per batch: MindSpore 2.10 fails to run a loaded graph with control flow
        # a second time ("The actor already exists").
        arrays[f"y_b{batch}"] = nn.GraphCell(ms.load(path + ".mindir"))(Tensor(x)).asnumpy()
    np.savez(os.path.join(out_dir, f"{name}.npz"), **arrays)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args()
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    for model_name in args.names or models(args.size):
        export(model_name, args.out_dir, args.size)
    sys.stdout.flush()
