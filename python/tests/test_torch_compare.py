"""CompilerConfig(compare=True) and precision_mode in graph-engine mode: the first call of each
compiled graph compares every value Estuary computes with eager PyTorch's, node by node."""
import csv
import glob
import json
import math
import os

import pytest
import torch
from torch import nn

import estuary
import estuary.torch as et

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


class MlpNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.down = nn.Linear(32, 8)

    def forward(self, x):
        return self.down(self.norm(torch.nn.functional.gelu(self.up(x))))


class TinyAttention(nn.Module):
    def __init__(self, width=32, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        batch, seq, width = x.shape
        q, k, v = self.qkv(x).reshape(batch, seq, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(width // self.heads), dim=-1)
        return self.out((scores @ v).transpose(1, 2).reshape(batch, seq, width)) + x


class TanhInTheMiddle(MlpNorm):
    """The Tanh reads a LayerNorm, so that no matmul epilogue takes it over."""

    def forward(self, x):
        return self.down(torch.tanh(self.norm(self.up(x))))


def run_compiled(model, x, tmp_path, calls=2, **options):
    compiled = torch.compile(model, backend=et.backend(compare=True, debug_dir=str(tmp_path), **options))
    with torch.no_grad():
        return [compiled(x) for _ in range(calls)]


def reports(tmp_path):
    """The JSON reports under the debug directory, loaded."""
    found = []
    for path in sorted(glob.glob(str(tmp_path / "estuary" / "model__*" / "compare" / "*.json"))):
        with open(path) as file:
            found.append((path, json.load(file)))
    return found


@pytest.mark.filterwarnings("error:estuary")
@pytest.mark.parametrize("model_class,shape,fx_names,fused_op", [
    (MlpNorm, (4, 16), {"addmm", "gelu", "native_layer_norm", "addmm_1"}, None),
    # The pipeline fuses the attention (bmm, div, _softmax, bmm_1): its result is that of the
    # last FX node it covers, view_5.
    (TinyAttention, (2, 5, 32), {"permute", "view_5", "addmm_1", "add"}, ("view_5", "Attention")),
])
def test_a_correct_graph_is_reported_clean_with_its_fx_node_names(model_class, shape, fx_names, fused_op, tmp_path):
    model = model_class().eval()
    x = torch.randn(*shape)
    results = run_compiled(model, x, tmp_path)
    with torch.no_grad():
        expected = model(x)
    for result in results:
        torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-4)

    [(path, report)] = reports(tmp_path)  # one graph, compared on its first call only
    base = path[:-len(".json")]
    assert os.path.exists(base + ".csv") and os.path.exists(base + ".txt")
    assert report["clean"] and report["first_past_threshold"] is None, report["summary"]
    assert report["reference"] == "eager PyTorch" and report["precision_mode"] == "origin"
    compared = [row for row in report["nodes"] if row["cosine"] is not None]
    assert compared and all(row["past_threshold"] is None for row in compared)
    names = {row["node"] for row in compared}
    assert fx_names <= names, names
    assert all(row["op"].startswith("aten.") for row in compared)
    if fused_op:
        node, op = fused_op
        assert any(row["node"] == node and row["estuary_op"].endswith(op) for row in compared)
    # The graph's output is compared too.
    assert report["outputs"] and all(row["cosine"] is not None for row in report["outputs"])
    with open(base + ".csv") as file:
        assert {row["node"] for row in csv.DictReader(file)} >= fx_names
    with open(base + ".txt") as file:
        assert "Clean: no node past the thresholds." in file.read()


def test_reports_go_to_estuary_debug_without_debug_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    compiled = torch.compile(MlpNorm().eval(), backend=et.backend(compare=True))
    with torch.no_grad():
        compiled(torch.randn(2, 16))
    assert glob.glob(str(tmp_path / "estuary_debug" / "estuary" / "compare" / "graph_*.json"))


def test_without_compare_nothing_is_compared(tmp_path):
    compiled = torch.compile(MlpNorm().eval(), backend=et.backend(debug_dir=str(tmp_path)))
    with torch.no_grad():
        compiled(torch.randn(2, 16))
    assert not reports(tmp_path)


def test_bf16_precision_is_built_and_compared_at_bf16_thresholds(tmp_path):
    model = MlpNorm().eval()
    x = torch.randn(4, 16)
    # allow_slow_precision: CPUs without AVX512-BF16 build bf16 too (slowly).
    [result, _] = run_compiled(model, x, tmp_path, precision_mode="allow_fp32_to_bf16", allow_slow_precision=True)
    with torch.no_grad():
        expected = model(x)
    assert result.dtype == torch.float32  # graph outputs keep their dtypes
    torch.testing.assert_close(result, expected, rtol=5e-2, atol=5e-2)
    assert not torch.equal(result, expected)
    [(_, report)] = reports(tmp_path)
    assert report["clean"], report["summary"]
    assert report["precision_mode"] == "allow_fp32_to_bf16"
    assert report["thresholds"] == {"min_cosine": 0.999, "max_rel": 5e-2}
    assert any(row["dtype"] == "bfloat16" for row in report["nodes"])


def test_fp16_on_a_cpu_without_fast_fp16_needs_allow_slow_precision():
    # The CPU device has no f16 kernels (its oneDNN has none): f16 converts to f32 and back
    # around every op.
    x = torch.randn(2, 16)
    compiled = torch.compile(MlpNorm().eval(), backend=et.backend(precision_mode="fp16", fallback="error"))
    with torch.no_grad(), pytest.raises(estuary.EstuaryError, match="allow_slow_precision"):
        compiled(x)
    torch._dynamo.reset()
    compiled = torch.compile(MlpNorm().eval(), backend=et.backend(precision_mode="fp16", allow_slow_precision=True,
                                                                  fallback="error"))
    with torch.no_grad():
        assert compiled(x).dtype == torch.float32


@pytest.mark.parametrize("options,message", [
    (dict(mode="fx", precision_mode="bf16"), "option 'precision_mode' has no effect in mode 'fx'"),
    (dict(mode="fx", allow_slow_precision=True), "option 'allow_slow_precision' has no effect in mode 'fx'"),
    (dict(mode="fx", compare=True), "option 'compare' has no effect in mode 'fx'"),
    (dict(precision_mode="half"), "precision_mode must be one of origin, fp32, bf16"),
    (dict(compare="yes"), "compare must be True or False"),
])
def test_bad_precision_and_compare_options_are_errors(options, message):
    with pytest.raises(ValueError, match=message):
        et.CompilerConfig(**options)


def test_build_options_name_the_mode_atc_spellings_mean():
    assert et.CompilerConfig().build_options == {}
    assert et.CompilerConfig(precision_mode="must_keep_origin_dtype").build_options == {}
    assert et.CompilerConfig(precision_mode="allow_mix_precision", allow_slow_precision=True).build_options == {
        "precision_mode": "mixed-fp16", "allow_slow_precision": "true"}


# Loading the plugin replaces Tanh's CPU kernel for the rest of this process: no other test
# here computes a Tanh.
def test_a_planted_fault_is_reported_at_its_fx_node(tmp_path):
    plugin = os.path.join(os.environ["ESTUARY_TEST_PLUGIN_DIR"], "libestuary_test_biased_tanh.so")
    model = TanhInTheMiddle().eval()
    x = torch.randn(4, 16)
    with pytest.warns(UserWarning, match="(?s)drifts from eager PyTorch.*the first is node 'tanh'"):
        [result, again] = run_compiled(model, x, tmp_path, plugins=[plugin])
    with torch.no_grad():
        expected = model(x)
    # The calls return the compiled graph's results, the faulty kernel's included.
    assert not torch.allclose(result, expected, atol=1e-3)
    torch.testing.assert_close(again, result)

    [(path, report)] = reports(tmp_path)
    first = report["first_past_threshold"]
    assert (first["node"], first["op"], first["value"]) == ("tanh", "aten.tanh.default", "tanh")
    assert first["max_abs"] == pytest.approx(0.05, rel=1e-3)
    # What the Tanh read is within the thresholds: the node itself drifts.
    assert first["inputs"] and all(row["past_threshold"] is None for row in first["inputs"])
    assert "the node itself drifts" in report["summary"]
    with open(path[:-len(".json")] + ".txt") as file:
        assert "first past the thresholds: node 'tanh' (aten.tanh.default)" in file.read()
