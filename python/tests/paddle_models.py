"""Models built with Paddle (random, seeded weights; nothing downloaded), saved with
paddle.jit.save, with inputs and Paddle Inference's own outputs: what test_paddle.py converts
with Estuary and compares. Runs in a Paddle environment (python/envs):

    .venvs/paddle/bin/python  python/tests/paddle_models.py OUT_DIR pir    [NAME...]
    .venvs/paddle/bin/python  python/tests/paddle_models.py OUT_DIR legacy [NAME...]   # OldIrGuard
    .venvs/paddle2/bin/python python/tests/paddle_models.py OUT_DIR legacy [NAME...]   # Paddle 2.6

For each model NAME: OUT_DIR/NAME/inference.{json|pdmodel,pdiparams} and OUT_DIR/NAME.npz
(inputs x_b<batch> and Paddle Inference's outputs y_b<batch>, batches 1 and 3). Paddle 3.3
writes legacy programs under OldIrGuard only for models its old static API still builds
(the CNNs); Paddle 2.6 writes every one, control flow included (while and
conditional_block sub-blocks), as the many models saved by Paddle 2.x are.
"""
import os
import sys

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.static import InputSpec

BATCHES = (1, 3)


def calibrated(model):
    """Batch norms with random statistics and affine parameters, so that the network's
    outputs are far from zero and a comparison sees every layer."""
    rng = np.random.default_rng(0)
    for layer in model.sublayers():
        if isinstance(layer, (nn.BatchNorm2D, nn.BatchNorm)):
            channels = layer._mean.shape[0]
            layer._mean.set_value(rng.normal(0, 0.1, channels).astype(np.float32))
            layer._variance.set_value(rng.uniform(0.5, 1.5, channels).astype(np.float32))
            layer.weight.set_value(rng.uniform(0.5, 1.5, channels).astype(np.float32))
            layer.bias.set_value(rng.normal(0, 0.1, channels).astype(np.float32))
    return model


def vision(constructor):
    def build():
        return calibrated(constructor(num_classes=10)), [None, 3, 64, 64]
    return build


class RMSNorm(nn.Layer):
    """RMSNorm as Paddle-written LLaMA code writes it: x * rsqrt(mean(x * x) + eps) * weight."""

    def __init__(self, dim, epsilon=1e-6):
        super().__init__()
        self.epsilon = epsilon
        self.weight = self.create_parameter([dim], default_initializer=nn.initializer.Normal(1.0, 0.1))

    def forward(self, x):
        return x * paddle.rsqrt(paddle.mean(x * x, axis=-1, keepdim=True) + self.epsilon) * self.weight


class DecoderBlock(nn.Layer):
    """A LLaMA-style pre-norm decoder block: causal attention and a SiLU-gated MLP."""

    def __init__(self, dim=64, heads=4, hidden=128):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.attention_norm = RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias_attr=False)
        self.out = nn.Linear(dim, dim, bias_attr=False)
        self.mlp_norm = RMSNorm(dim)
        self.gate = nn.Linear(dim, hidden, bias_attr=False)
        self.up = nn.Linear(dim, hidden, bias_attr=False)
        self.down = nn.Linear(hidden, dim, bias_attr=False)
        self.final_norm = RMSNorm(dim)

    def forward(self, x):
        h = self.attention_norm(x)
        q, k, v = paddle.split(self.qkv(h), 3, axis=-1)
        q, k, v = (t.reshape([0, 0, self.heads, self.head_dim]).transpose([0, 2, 1, 3]) for t in (q, k, v))
        scores = paddle.matmul(q, k, transpose_y=True) * (1.0 / self.head_dim ** 0.5)
        mask = paddle.triu(paddle.full([16, 16], -1e9, dtype=x.dtype), diagonal=1)
        attended = paddle.matmul(F.softmax(scores + mask, axis=-1), v)
        x = x + self.out(attended.transpose([0, 2, 1, 3]).reshape([0, 0, self.heads * self.head_dim]))
        h = self.mlp_norm(x)
        x = x + self.down(F.silu(self.gate(h)) * self.up(h))
        return self.final_norm(x)


def encoder():
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.1)
    return nn.TransformerEncoder(layer, num_layers=2), [None, 16, 64]


def decoder():
    return DecoderBlock(), [None, 16, 64]


class ControlFlow(nn.Layer):
    """A data-dependent if, a counted while and a data-dependent while (dy2st turns them
    into PIR if/while regions, or legacy conditional_block/while sub-blocks)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        y = self.linear(x)
        if paddle.mean(x) > 0:
            y = y * 2.0 + 1.0
        else:
            y = y - 3.0
        i = paddle.zeros([1], dtype="int64")
        while i < 3:
            y = paddle.tanh(self.linear(y))
            i = i + 1
        total = paddle.zeros([1], dtype="float32")
        while paddle.sum(total) < paddle.sum(paddle.abs(y)):
            total = total + 1.5
        return y * total


def control_flow():
    return ControlFlow(), [None, 8]


def control_flow_inputs(batch, rng):
    x = np.abs(rng.standard_normal((batch, 8))).astype(np.float32)
    return x if batch == 1 else -x


class Unsupported(nn.Layer):
    """Ops Estuary has no translation for (the census lists them all, with their nodes)."""

    def forward(self, x):
        return paddle.erfinv(paddle.tanh(x) * 0.5) + paddle.lgamma(paddle.abs(x) + 1.0)


def unsupported():
    return Unsupported(), [None, 4]


MODELS = {
    "resnet50": vision(paddle.vision.models.resnet50),
    "mobilenet_v2": vision(paddle.vision.models.mobilenet_v2),
    "mobilenet_v3_small": vision(paddle.vision.models.mobilenet_v3_small),
    "encoder": encoder,
    "decoder": decoder,
    "control_flow": control_flow,
    "unsupported": unsupported,
}
INPUTS = {"control_flow": control_flow_inputs}


def paddle_inference(directory, x):
    """The saved model run by Paddle Inference (the deployment engine, not the dygraph)."""
    import paddle.inference as inference

    json_program = os.path.join(directory, "inference.json")
    program = json_program if os.path.exists(json_program) else os.path.join(directory, "inference.pdmodel")
    config = inference.Config(program, os.path.join(directory, "inference.pdiparams"))
    config.disable_gpu()
    config.set_cpu_math_library_num_threads(1)
    predictor = inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(x.shape)
    handle.copy_from_cpu(x)
    predictor.run()
    return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()


def save(name, out_dir, form):
    paddle.seed(0)
    np.random.seed(0)
    model, shape = MODELS[name]()
    model.eval()
    directory = os.path.join(out_dir, name)
    spec = [InputSpec(shape, "float32", "x")]
    legacy_guard = form == "legacy" and hasattr(getattr(paddle, "pir_utils", None), "OldIrGuard")
    if legacy_guard:
        with paddle.pir_utils.OldIrGuard():
            paddle.jit.save(model, os.path.join(directory, "inference"), input_spec=spec)
    else:
        paddle.jit.save(model, os.path.join(directory, "inference"), input_spec=spec)
    rng = np.random.default_rng(1)
    arrays = {}
    for batch in BATCHES:
        make = INPUTS.get(name, lambda b, r: r.standard_normal([b] + shape[1:]).astype(np.float32))
        x = make(batch, rng)
        arrays[f"x_b{batch}"] = x
        arrays[f"y_b{batch}"] = paddle_inference(directory, x)
    np.savez(os.path.join(out_dir, f"{name}.npz"), **arrays)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[2] not in ("pir", "legacy"):
        sys.exit(__doc__)
    for model_name in sys.argv[3:] or MODELS:
        save(model_name, sys.argv[1], sys.argv[2])
