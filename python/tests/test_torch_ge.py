"""estuary.torch in graph-engine mode against eager PyTorch, with real models."""
import warnings

import pytest
import torch

import estuary
import estuary.torch as et
from torch_models import BertEncoder, LlamaBlock, import_torchvision

TOLERANCE = dict(rtol=1e-4, atol=1e-4)

# A graph that falls back to eager PyTorch warns "estuary: ..."; here that is a failure.
pytestmark = [pytest.mark.usefixtures("fresh_dynamo"), pytest.mark.filterwarnings("error:estuary")]


class CountingBackend:
    """Wraps estuary's backend to count the graphs it compiles. (Dynamo may abandon a first
    attempt and restart its analysis, e.g. to turn Python floats into tensors: not counted.)"""

    def __init__(self, **options):
        self.backend = et.backend(**options)
        self.calls = 0

    def __call__(self, gm, example_inputs):
        compiled = self.backend(gm, example_inputs)
        self.calls += 1
        return compiled


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_torchvision_models_match_eager(name):
    model = getattr(import_torchvision().models, name)().eval()
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        expected = model(x)
        compiled = torch.compile(model, backend=et.backend())
        torch.testing.assert_close(compiled(x), expected, **TOLERANCE)


def test_bert_encoder_matches_eager_for_new_batch_and_sequence_sizes_without_recompiling():
    model = BertEncoder().eval()
    counting = CountingBackend()
    compiled = torch.compile(model, backend=counting, dynamic=True)
    with torch.no_grad():
        for batch, seq in [(2, 8), (3, 5), (2, 12), (4, 7)]:
            ids = torch.randint(0, 100, (batch, seq))
            mask = torch.ones(batch, seq)
            mask[:, seq - 2:] = 0.0
            torch.testing.assert_close(compiled(ids, mask), model(ids, mask), **TOLERANCE)
    assert counting.calls == 1


def test_llama_block_updates_the_kv_cache_in_place_like_eager():
    eager = LlamaBlock().eval()
    model = LlamaBlock().eval()
    model.load_state_dict(eager.state_dict())
    compiled = torch.compile(model, backend=et.backend())
    cache_address = model.k_cache.data_ptr()
    with torch.no_grad():
        for step, pos in enumerate([0, 4, 8]):
            x = torch.randn(2, 4, 64)
            position = torch.tensor(pos)
            torch.testing.assert_close(compiled(x, position), eager(x, position), **TOLERANCE)
            torch.testing.assert_close(model.k_cache, eager.k_cache, **TOLERANCE)
            torch.testing.assert_close(model.v_cache, eager.v_cache, **TOLERANCE)
    assert model.k_cache.data_ptr() == cache_address
    assert model.k_cache[:, :, :12].abs().sum() > 0


def test_llama_block_with_dynamic_sequence_length_builds_once():
    eager = LlamaBlock().eval()
    model = LlamaBlock().eval()
    model.load_state_dict(eager.state_dict())
    counting = CountingBackend()
    compiled = torch.compile(model, backend=counting, dynamic=True)
    with torch.no_grad():
        pos = 0
        for seq in (3, 5, 2, 6):
            x = torch.randn(2, seq, 64)
            position = torch.tensor(pos)
            torch.testing.assert_close(compiled(x, position), eager(x, position), **TOLERANCE)
            pos += seq
        torch.testing.assert_close(model.k_cache, eager.k_cache, **TOLERANCE)
    assert counting.calls == 1


class WithUnsupportedOp(torch.nn.Module):
    """sort and erfinv have no Estuary translation: they run in PyTorch between GE regions."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)
        self.b = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = torch.tanh(torch.relu(self.a(x)) * 2.0 + 1.0) * 0.5
        y = torch.erfinv(torch.sort(y, dim=-1).values)
        return torch.tanh(self.b(y)) - 0.5


def test_ops_without_translation_run_in_pytorch_between_graph_engine_regions(tmp_path):
    model = WithUnsupportedOp().eval()
    x = torch.randn(4, 16)
    compiled = torch.compile(model, backend=et.backend(debug_dir=str(tmp_path)))
    with torch.no_grad(), pytest.warns(UserWarning, match=r"2 of \d+ ops run in PyTorch, around 2 Estuary region\(s\): "
                                                         r"aten.erfinv.default x1 \(no Estuary translation\), "
                                                         r"aten.sort.default x1 \(no Estuary translation\)"):
        torch.testing.assert_close(compiled(x), model(x), **TOLERANCE)
    log = (tmp_path / "estuary" / "debug.log").read_text()
    assert "partitioned; PyTorch runs ['aten.erfinv.default', 'aten.sort.default']" in log
    assert log.count("built for symbolic sizes") == 2  # one GE build per region


def test_fallback_error_names_the_untranslated_ops():
    compiled = torch.compile(WithUnsupportedOp().eval(), backend=et.backend(fallback="error"))
    with torch.no_grad(), pytest.raises(Exception, match="aten.sort.default"):
        compiled(torch.randn(4, 16))


def test_recompile_limit_then_eager_with_a_warning():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    compiled = torch.compile(model, backend=et.backend(recompile_limit=2), dynamic=True)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for batch in (2, 3, 4, 5):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(compiled(x), model(x), **TOLERANCE)
    messages = [str(w.message) for w in caught if "recompile_limit=2" in str(w.message)]
    assert len(messages) == 1 and "runs eagerly from now on" in messages[0]


def test_graphs_needing_gradients_run_in_pytorch_with_a_warning():
    eager = torch.nn.Linear(4, 4)
    model = torch.nn.Linear(4, 4)
    model.load_state_dict(eager.state_dict())
    x = torch.randn(2, 4)
    with pytest.warns(UserWarning, match="needs gradients and runs in PyTorch") as caught:
        torch.compile(model, backend=et.backend())(x).sum().backward()
    assert len([w for w in caught if "estuary" in str(w.message)]) == 1
    eager(x).sum().backward()
    torch.testing.assert_close(model.weight.grad, eager.weight.grad)


def test_fallback_error_forbids_gradients_and_the_recompile_limit_too():
    x = torch.randn(2, 4)
    with pytest.raises(Exception, match="needs gradients and runs in PyTorch.*fallback='error'"):
        torch.compile(torch.nn.Linear(4, 4), backend=et.backend(fallback="error"))(x)
    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    compiled = torch.compile(model, backend=et.backend(fallback="error", recompile_limit=1), dynamic=True)
    with torch.no_grad():
        compiled(torch.randn(2, 8))
        with pytest.raises(Exception, match="fallback='error' forbids running it eagerly"):
            compiled(torch.randn(3, 8))


def test_static_dims_build_one_graph_per_size(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()).eval()
    compiled = torch.compile(model, backend=et.backend(dynamic=False, debug_dir=str(tmp_path)), dynamic=True)
    with torch.no_grad():
        for batch in (2, 3, 2):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(compiled(x), model(x), **TOLERANCE)
    builds = [line for line in (tmp_path / "estuary" / "debug.log").read_text().splitlines() if "built for" in line]
    assert len(builds) == 2 and "{'s" in builds[0] and ": 2}" in builds[0] and ": 3}" in builds[1]
    (first, second) = sorted((tmp_path / "estuary").glob("model__*/ir/*_translated.est"))
    assert "f32[2,8]" in first.read_text() and "f32[3,8]" in second.read_text()


def test_debug_dumps_under_torch_compile_debug(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_COMPILE_DEBUG", "1")
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    with torch._dynamo.config.patch(debug_dir_root=str(tmp_path)), torch.no_grad():
        torch.compile(model, backend=et.backend())(torch.randn(2, 8))
    runs = list(tmp_path.glob("run_*/estuary"))
    assert len(runs) == 1
    model_dir = next(runs[0].glob("model__*"))
    assert (model_dir / "dynamo_out_graph.txt").exists()
    assert [p.name for p in sorted((model_dir / "forward").iterdir())] == ["000_aot_forward_graph_received.txt"]
    ir = model_dir / "ir"
    (translated,) = ir.glob("000_graph_*_translated.est")
    name = translated.name[len("000_"):-len("_translated.est")]  # graphs are numbered per process
    assert (ir / f"001_{name}_optimized.est").exists()
    passes = {p.name for p in (ir / f"{name}_passes").iterdir()}  # the pipeline's, before and after each
    assert {"001_before_infer_shapes.est", "001_after_infer_shapes.est", "002_before_canonicalize.est"} <= passes
    log = (runs[0] / "debug.log").read_text()
    assert "Gemm" in log and "passes that changed the IR:" in log


class SlotCache(torch.nn.Module):
    """Writes into a buffer by indexing: select_scatter and slice_scatter after functionalization."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(2, 8, 4))

    def forward(self, k, block):
        self.cache[:, 3] = k
        self.cache[:, 4:6] = block
        self.cache[:, -1] = k * 2.0
        return self.cache.sum(1)


def test_indexed_writes_into_a_buffer_update_it_in_place(tmp_path):
    eager, model = SlotCache(), SlotCache()
    compiled = torch.compile(model, backend=et.backend(debug_dir=str(tmp_path)))
    address = model.cache.data_ptr()
    with torch.no_grad():
        for _ in range(2):
            k, block = torch.randn(2, 4), torch.randn(2, 2, 4)
            torch.testing.assert_close(compiled(k, block), eager(k, block), **TOLERANCE)
            torch.testing.assert_close(model.cache, eager.cache, **TOLERANCE)
    assert model.cache.data_ptr() == address
    (translated,) = (tmp_path / "estuary").glob("model__*/ir/*_translated.est")
    assert "mutable" in translated.read_text() and "ScatterElements" in translated.read_text()


class ScaledNorm(torch.nn.Module):
    """A Python float attribute (eps) that dynamic=True hands over as a 0-d f64 input."""

    def __init__(self):
        super().__init__()
        self.eps = 1e-6
        self.weight = torch.nn.Parameter(torch.randn(16))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def test_python_floats_are_constants_of_a_build_and_a_new_value_rebuilds(tmp_path):
    model = ScaledNorm().eval()
    compiled = torch.compile(model, backend=et.backend(debug_dir=str(tmp_path)), dynamic=True)
    x = torch.randn(3, 5, 16) * 1e-2
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), **TOLERANCE)
        model.eps = 1e-2  # large against x's mean square: a stale eps would show
        torch.testing.assert_close(compiled(x), model(x), **TOLERANCE)
    log = (tmp_path / "estuary" / "debug.log").read_text()
    assert "recognize_rms_norm (1)" in log  # the eps was a constant the recognizer could read
    assert log.count("built for symbolic sizes") == 2
