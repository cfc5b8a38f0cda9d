"""Real models built with PyTorch (random, seeded weights; nothing downloaded) and exported to
ONNX: what the README's demo, the ONNX frontend tests and bench/onnx_vs_ort.py run.

    from models import MODELS, export_onnx
    path, inputs = export_onnx("resnet50", "/tmp/out", batch=1)

As a script, in PyTorch's environment, for a process that must not import torch:

    .venvs/torch/bin/python examples/models.py OUT_DIR resnet50 bert_encoder

writes OUT_DIR/<name>.onnx (and its external data) and OUT_DIR/<name>.inputs.npz.
"""
import math
import os
import sys
import types

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_inputs import (decoder_inputs, encoder_inputs, example_inputs, hidden_states_inputs,  # noqa: E402
                          image_inputs)


def import_torchvision():
    # torchvision's wheel carries C++ ops built against a CUDA build of torch, which this
    # machine's CPU build of torch cannot load; registering their fake kernels then fails at
    # import. The model definitions are plain Python and need none of them.
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    import torchvision

    return torchvision


class EncoderLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.ffn_out = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask_bias):
        batch, seq, hidden = x.shape
        head_dim = hidden // self.heads
        q, k, v = self.qkv(x).split(hidden, dim=-1)
        q, k, v = (t.reshape(batch, seq, self.heads, head_dim).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim) + mask_bias
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, hidden)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.ffn_out(nn.functional.gelu(self.ffn_in(x))))


class BertLikeEncoder(nn.Module):
    """BERT-base's shape: 12 layers, hidden 768, 12 heads, FFN 3072, vocabulary 30522."""

    def __init__(self, layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, max_positions=512):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_positions, hidden)
        self.token_types = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.words(input_ids) + self.positions(positions) + self.token_types(torch.zeros_like(input_ids))
        x = self.norm(x)
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x, torch.tanh(self.pooler(x[:, 0]))


class DecoderLayer(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden)
        self.ffn_in = nn.Linear(hidden, 4 * hidden)
        self.ffn_out = nn.Linear(4 * hidden, hidden)

    def forward(self, x, past_key, past_value):
        batch, seq, hidden = x.shape
        head_dim = hidden // self.heads
        q, k, v = self.qkv(self.norm1(x)).split(hidden, dim=-1)
        q, k, v = (t.reshape(batch, seq, self.heads, head_dim).transpose(1, 2) for t in (q, k, v))
        key = torch.cat([past_key, k], dim=2)
        value = torch.cat([past_value, v], dim=2)
        scores = q @ key.transpose(-1, -2) / math.sqrt(head_dim)
        context = (scores.softmax(-1) @ value).transpose(1, 2).reshape(batch, seq, hidden)
        x = x + self.out(context)
        x = x + self.ffn_out(nn.functional.gelu(self.ffn_in(self.norm2(x)), approximate="tanh"))
        return x, key, value


class Gpt2LikeDecoder(nn.Module):
    """GPT-2 small's shape: 12 layers, hidden 768, 12 heads, vocabulary 50257, tied LM head.
    One decoding step: new tokens in, logits and the grown KV cache out."""

    def __init__(self, layers=12, hidden=768, heads=12, vocab=50257, max_positions=1024):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_positions, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)

    def forward(self, input_ids, past_keys, past_values):
        past = past_keys.shape[3]
        positions = torch.arange(past, past + input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.words(input_ids) + self.positions(positions)
        keys, values = [], []
        for i, layer in enumerate(self.layers):
            x, key, value = layer(x, past_keys[i], past_values[i])
            keys.append(key)
            values.append(value)
        logits = self.norm(x) @ self.words.weight.t()
        return logits, torch.stack(keys), torch.stack(values)


class RmsNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(hidden))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class LlamaLikeBlock(nn.Module):
    """One LLaMA decoder layer at a small size: RMSNorm, rotary position embedding, grouped
    query attention (8 query heads over 2 key/value heads) with a causal mask, and a SwiGLU MLP,
    over sequences of 64 tokens of width 512."""

    def __init__(self, hidden=512, heads=8, kv_heads=2, ffn=1408, max_positions=2048):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.norm1, self.norm2 = RmsNorm(hidden), RmsNorm(hidden)
        self.q = nn.Linear(hidden, hidden, bias=False)
        self.kv = nn.Linear(hidden, 2 * kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(hidden, hidden, bias=False)
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)
        inverse = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(max_positions).float(), inverse)
        self.register_buffer("cos", torch.cat([angles, angles], -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat([angles, angles], -1).sin(), persistent=False)

    def forward(self, x):
        batch, seq, hidden = x.shape
        h = self.norm1(x)
        q = self.q(h).reshape(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(h).reshape(batch, seq, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        cos, sin = self.cos[:seq], self.sin[:seq]
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        repeat = self.heads // self.kv_heads
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        causal = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, hidden)
        x = x + self.o(context)
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


def _resnet50():
    return import_torchvision().models.resnet50()


def _mobilenet_v2():
    return import_torchvision().models.mobilenet_v2()


# name -> (constructor, inputs(batch, rng), output names, dims that stay symbolic)
MODELS = {
    "resnet50": (_resnet50, image_inputs, ["logits"], {"x": {0: "batch"}}),
    "mobilenet_v2": (_mobilenet_v2, image_inputs, ["logits"], {"x": {0: "batch"}}),
    "bert_encoder": (BertLikeEncoder, encoder_inputs, ["hidden", "pooled"],
                     {"input_ids": {0: "batch"}, "attention_mask": {0: "batch"}}),
    "gpt2_decoder": (Gpt2LikeDecoder, decoder_inputs, ["logits", "present_keys", "present_values"],
                     {"past_keys": {3: "past"}, "past_values": {3: "past"}}),
    "llama_block": (LlamaLikeBlock, hidden_states_inputs, ["hidden"], {"x": {0: "batch"}}),
}


def build(name, seed=0):
    """The model in eval mode with seeded random weights."""
    torch.manual_seed(seed)
    model = MODELS[name][0]().eval()
    if name in ("resnet50", "mobilenet_v2"):
        # Freshly initialized BatchNorm statistics are 0 and 1; real ones are not, and a
        # converter that folds them wrongly would go unnoticed.
        generator = torch.Generator().manual_seed(seed + 1)
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.copy_(torch.randn(module.num_features, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(module.num_features, generator=generator) + 0.5)
    return model


def export_onnx(name, directory, batch=1, seed=0, dynamo=True):
    """Exports the model to <directory>/<name>.onnx with torch.onnx.export (the dynamo-based
    exporter by default, which writes the weights to an external data file) and returns the
    path and example inputs."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{name}.onnx")
    inputs = example_inputs(name, batch, seed)
    _, _, output_names, dynamic = MODELS[name]
    if not os.path.exists(path):
        model = build(name, seed)
        args = tuple(torch.from_numpy(value) for value in inputs.values())
        with torch.no_grad():
            if dynamo:
                shapes = {key: {dim: torch.export.Dim.DYNAMIC for dim in dims} for key, dims in dynamic.items()}
                names = list(inputs)
                dynamic_shapes = tuple(shapes.get(key) for key in names)
                torch.onnx.export(model, args, path, input_names=names, output_names=output_names,
                                  dynamic_shapes=dynamic_shapes, dynamo=True, verbose=False)
            else:
                torch.onnx.export(model, args, path, input_names=list(inputs), output_names=output_names,
                                  dynamic_axes={key: dict(dims) for key, dims in dynamic.items()},
                                  opset_version=17, dynamo=False)
    return path, inputs


if __name__ == "__main__":
    if len(sys.argv) < 3 or any(name not in MODELS for name in sys.argv[2:]):
        sys.exit(f"usage: models.py OUT_DIR NAME... (names: {', '.join(MODELS)})")
    for name in sys.argv[2:]:
        path, inputs = export_onnx(name, sys.argv[1])
        np.savez(os.path.join(sys.argv[1], f"{name}.inputs.npz"), **inputs)
        print(path)
