"""Models for the estuary.torch tests: torchvision's, and hand-written transformer blocks.

Weights are random (seeded by the tests); nothing is downloaded.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from models import import_torchvision  # noqa: E402,F401  (torchvision without its CUDA-only ops)


class BertLayer(nn.Module):
    """An HF-style encoder layer: fused QKV, matmul attention with an additive mask, GELU FFN.
    (nn.TransformerEncoder would collapse into one fused op on its eval fast path.)"""

    def __init__(self, hidden=64, heads=4, ffn=128):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.up = nn.Linear(hidden, ffn)
        self.down = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden)

    def forward(self, x, mask):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).permute(0, 2, 1, 3) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // self.heads)
        scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
        context = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, s, h)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.down(F.gelu(self.up(x))))


class BertEncoder(nn.Module):
    def __init__(self, vocab=100, hidden=64, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(BertLayer(hidden) for _ in range(layers))

    def forward(self, ids, mask):
        x = self.norm(self.embed(ids))
        for layer in self.layers:
            x = layer(x, mask)
        return x


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class LlamaBlock(nn.Module):
    """RMSNorm, rotary embedding, SDPA with a KV cache updated in place, SwiGLU."""

    def __init__(self, hidden=64, heads=4, ffn=128, max_seq=32, batch=2):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.attn_norm, self.ffn_norm = RMSNorm(hidden), RMSNorm(hidden)
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden, bias=False) for _ in range(4))
        self.gate, self.up_proj = nn.Linear(hidden, ffn, bias=False), nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(max_seq).float(), inv)
        angles = torch.cat([angles, angles], dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())
        self.register_buffer("k_cache", torch.zeros(batch, heads, max_seq, self.head_dim))
        self.register_buffer("v_cache", torch.zeros(batch, heads, max_seq, self.head_dim))

    def forward(self, x, pos):
        b, s, h = x.shape
        y = self.attn_norm(x)
        q, k, v = (p(y).view(b, s, self.heads, self.head_dim).transpose(1, 2) for p in (self.q, self.k, self.v))
        positions = torch.arange(s) + pos
        cos, sin = self.cos[positions], self.sin[positions]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        self.k_cache.index_copy_(2, positions, k)
        self.v_cache.index_copy_(2, positions, v)
        attn = F.scaled_dot_product_attention(q, self.k_cache[:b], self.v_cache[:b])
        x = x + self.o(attn.transpose(1, 2).reshape(b, s, h))
        y = self.ffn_norm(x)
        return x + self.down(F.silu(self.gate(y)) * self.up_proj(y))


class WindowAttention(torch.nn.Module):
    """Windows of a dynamic-size feature map: sizes computed from the input's shape reach the
    reshapes as integers, and an op PyTorch runs between two regions hands them on."""

    def forward(self, x):
        batch, height, width, channels = x.shape
        windows = x.reshape(batch, height // 2, 2, width // 2, 2, channels).permute(0, 1, 3, 2, 4, 5)
        windows = windows.reshape(-1, 4, channels)
        scores = torch.softmax(windows @ windows.transpose(1, 2), -1)
        mixed = torch.ops.aten.erfinv(torch.tanh(scores) * 0.5)  # no translation: a region boundary
        out = (mixed @ windows).reshape(batch, height // 2, width // 2, 2, 2, channels)
        return out.permute(0, 1, 3, 2, 4, 5).reshape(batch, height * width, channels)
