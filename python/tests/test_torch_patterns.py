"""estuary.torch.register_replacement: multi-output patterns, extra_check vetoes,
search_fn_pattern, in FX mode and in graph-engine mode."""
import pytest
import torch

import estuary.torch as et

TOLERANCE = dict(rtol=1e-5, atol=1e-5)


@torch.library.custom_op("estuary_test::add_rms_norm", mutates_args=())
def add_rms_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    s = x1 + x2
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * gamma, s


@add_rms_norm.register_fake
def _(x1, x2, gamma, eps):
    return torch.empty_like(x1), torch.empty_like(x1)


@torch.library.custom_op("estuary_test::silu_mul", mutates_args=())
def silu_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(a) * b


@silu_mul.register_fake
def _(a, b):
    return torch.empty_like(a)


def search_add_rms_norm(x1, x2, gamma):
    s = x1 + x2
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma, s


def replace_add_rms_norm(x1, x2, gamma):
    y, s = torch.ops.estuary_test.add_rms_norm(x1, x2, gamma, 1e-6)
    return y, s


class AddNorm(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.randn(dim))

    def forward(self, x, residual):
        y, s = search_add_rms_norm(x, residual, self.gamma)
        return torch.relu(y), s * 2.0


@pytest.fixture(autouse=True)
def fresh():
    torch._dynamo.reset()
    et.clear_replacements()
    torch.manual_seed(0)
    yield
    et.clear_replacements()
    torch._dynamo.reset()


def run(model, inputs, tmp_path, **options):
    compiled = torch.compile(model, backend=et.backend(debug_dir=str(tmp_path), **options))
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), model(*inputs), **TOLERANCE)
    (path,) = (tmp_path / "estuary").glob("model__*/forward/*_after_*pattern*.txt")
    return path.read_text()


def register_add_rms_norm(extra_check=None):
    example = [torch.empty(1, 1, 8), torch.empty(1, 1, 8), torch.empty(8)]
    options = {"extra_check": extra_check} if extra_check else {}
    assert et.register_replacement(search_add_rms_norm, replace_add_rms_norm, example, **options)


def test_multi_output_replacement_in_fx_mode(tmp_path):
    register_add_rms_norm()
    graph = run(AddNorm(64).eval(), (torch.randn(3, 5, 64), torch.randn(3, 5, 64)), tmp_path, mode="fx")
    assert "estuary_test.add_rms_norm.default" in graph
    assert "aten.rsqrt" not in graph


def test_extra_check_vetoes_by_last_dimension(tmp_path):
    seen = []

    def only_64(match):
        last = match.kwargs["x1"].meta["val"].shape[-1]
        seen.append(last)
        return last == 64

    register_add_rms_norm(only_64)
    graph = run(AddNorm(32).eval(), (torch.randn(2, 32), torch.randn(2, 32)), tmp_path / "32", mode="fx")
    # Vetoed: the user's op is not there; Estuary's default RMSNorm fusion takes the pattern.
    assert "estuary_test.add_rms_norm.default" not in graph and "torch.ops.estuary.add_rms_norm.default" in graph
    torch._dynamo.reset()
    graph = run(AddNorm(64).eval(), (torch.randn(2, 64), torch.randn(2, 64)), tmp_path / "64", mode="fx")
    assert "estuary_test.add_rms_norm.default" in graph
    assert seen == [32, 64]


def test_search_fn_pattern_replaces_tracing(tmp_path):
    from torch._inductor.pattern_matcher import CallFunction, KeywordArg

    aten = torch.ops.aten
    pattern = CallFunction(aten.mul.Tensor, CallFunction(aten.silu.default, KeywordArg("a")), KeywordArg("b"))

    def search(a, b):
        raise AssertionError("search_fn is not traced when search_fn_pattern is given")

    def replace(a, b):
        return torch.ops.estuary_test.silu_mul(a, b)

    assert et.register_replacement(search, replace, [torch.empty(4), torch.empty(4)], search_fn_pattern=pattern)

    class SwiGLU(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate, self.up = torch.nn.Linear(16, 32), torch.nn.Linear(16, 32)

        def forward(self, x):
            return torch.nn.functional.silu(self.gate(x)) * self.up(x)

    graph = run(SwiGLU().eval(), (torch.randn(4, 16),), tmp_path, mode="fx")
    assert "estuary_test.silu_mul.default" in graph and "aten.silu" not in graph


def test_replacement_applies_in_graph_engine_mode(tmp_path):
    # The replacement's custom op has no Estuary translation: the graph is partitioned and
    # PyTorch runs it, while the GE backend runs the rest.
    register_add_rms_norm()
    graph = run(AddNorm(64).eval(), (torch.randn(3, 5, 64), torch.randn(3, 5, 64)), tmp_path)
    assert "estuary_test.add_rms_norm.default" in graph
    log = (tmp_path / "estuary" / "debug.log").read_text()
    assert "user patterns: 1 replacement(s)" in log
    assert "PyTorch runs ['estuary_test.add_rms_norm.default']" in log


def test_replacement_with_an_estuary_op_is_translated_and_fused_in_graph_engine_mode(tmp_path):
    def replace(x1, x2, gamma):
        y, s = torch.ops.estuary.add_rms_norm(x1, x2, gamma, 1e-6)
        return y, s

    example = [torch.empty(1, 1, 8), torch.empty(1, 1, 8), torch.empty(8)]
    assert et.register_replacement(search_add_rms_norm, replace, example)
    model = AddNorm(64).eval()
    inputs = (torch.randn(3, 5, 64), torch.randn(3, 5, 64))
    with torch.no_grad():
        compiled = torch.compile(model, backend=et.backend(debug_dir=str(tmp_path)))
        torch.testing.assert_close(compiled(*inputs), model(*inputs), **TOLERANCE)
    log = (tmp_path / "estuary" / "debug.log").read_text()
    assert "user patterns: 1 replacement(s)" in log and "partitioned" not in log and "eager" not in log
    (optimized,) = (tmp_path / "estuary").glob("model__*/ir/*_optimized.est")
    assert "estuary::AddRMSNorm(" in optimized.read_text()
    torch._dynamo.reset()
    graph = run(model, inputs, tmp_path / "fx", mode="fx")  # PyTorch runs the op's implementation
    assert "torch.ops.estuary.add_rms_norm.default" in graph


def test_joint_fwd_bwd_replacement_applies_to_training_graphs(tmp_path):
    # x * sigmoid(x) written out, and its backward, become aten.silu and silu_backward.
    def search(x, w):
        return x * torch.sigmoid(x) * w

    def replace(x, w):
        return torch.nn.functional.silu(x) * w

    example = [torch.empty(4, 8, requires_grad=True), torch.empty(8, requires_grad=True)]
    assert et.register_replacement(search, replace, example, trace_fn=et.joint_fwd_bwd)

    class Gated(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(16))

        def forward(self, x):
            return search(x, self.w).sum(-1)

    eager, model = Gated(), Gated()
    model.load_state_dict(eager.state_dict())
    x = torch.randn(3, 16, requires_grad=True)
    x_eager = x.detach().clone().requires_grad_()
    compiled = torch.compile(model, backend=et.backend(mode="fx", debug_dir=str(tmp_path)))
    compiled(x).sum().backward()
    eager(x_eager).sum().backward()
    torch.testing.assert_close(x.grad, x_eager.grad, **TOLERANCE)
    torch.testing.assert_close(model.w.grad, eager.w.grad, **TOLERANCE)
    forward_dir = tmp_path / "estuary"
    (forward,) = forward_dir.glob("model__*/forward/*_training_forward.txt")
    (backward,) = forward_dir.glob("model__*/forward/*_training_backward.txt")
    assert "aten.silu.default" in forward.read_text() and "aten.sigmoid" not in forward.read_text()
    assert "aten.silu_backward.default" in backward.read_text()
    assert "user patterns in the joint graph: 1 replacement(s)" in (forward_dir / "debug.log").read_text()
