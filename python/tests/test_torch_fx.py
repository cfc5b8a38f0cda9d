"""estuary.torch in FX mode: each pass's effect on the graph, and results equal to eager."""
import pytest
import torch

import estuary.torch as et
from estuary import EstuaryError
from torch_models import BertEncoder, LlamaBlock, WindowAttention

TOLERANCE = dict(rtol=1e-4, atol=1e-4)

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def returned_graph(debug_dir):
    """The FX graph fx mode handed back to PyTorch, its calls bound (fx_lowering), as dumped
    (the first compiled, where new sizes made several)."""
    return sorted((debug_dir / "estuary").glob("model__*/forward/*_returned.txt"))[0].read_text()


def optimized_graph(debug_dir):
    """The FX graph after fx mode's passes, before its calls are bound (fx_lowering), as dumped
    (the first compiled, where new sizes made several)."""
    return sorted((debug_dir / "estuary").glob("model__*/forward/*_optimized.txt"))[0].read_text()


def run_llama(tmp_path, **options):
    eager = LlamaBlock().eval()
    model = LlamaBlock().eval()
    model.load_state_dict(eager.state_dict())
    compiled = torch.compile(model, backend=et.backend(mode="fx", debug_dir=str(tmp_path), **options))
    with torch.no_grad():
        for pos in (0, 4, 8):
            x, position = torch.randn(2, 4, 64), torch.tensor(pos)
            torch.testing.assert_close(compiled(x, position), eager(x, position), **TOLERANCE)
            torch.testing.assert_close(model.k_cache, eager.k_cache, **TOLERANCE)
            torch.testing.assert_close(model.v_cache, eager.v_cache, **TOLERANCE)
    return optimized_graph(tmp_path), (tmp_path / "estuary" / "debug.log").read_text()


def test_input_inplace_pass_restores_the_kv_cache_updates(tmp_path):
    graph, log = run_llama(tmp_path)
    assert graph.count("torch.ops.aten.index_copy_.default") == 2
    assert "torch.ops.aten.copy_.default" not in graph
    assert "input_inplace_pass: 2 functional update(s) restored to in-place ops" in log


def test_without_input_inplace_pass_the_copy_pairs_stay(tmp_path):
    graph, log = run_llama(tmp_path, input_inplace_pass=False)
    assert graph.count("torch.ops.aten.copy_.default") == 2
    assert "index_copy_.default" not in graph
    assert "input_inplace_pass" not in log


def test_inplace_pass_makes_intermediate_ops_in_place(tmp_path):
    graph, log = run_llama(tmp_path)
    assert "torch.ops.aten.mul_.Tensor" in graph or "torch.ops.aten.add_.Tensor" in graph
    graph_off, _ = run_llama(tmp_path / "off", inplace_pass=False)
    assert "torch.ops.aten.mul_.Tensor" not in graph_off and "torch.ops.aten.add_.Tensor" not in graph_off


def test_pattern_fusion_pass_fuses_written_out_attention(tmp_path):
    model = BertEncoder().eval()
    compiled = torch.compile(model, backend=et.backend(mode="fx", debug_dir=str(tmp_path)))
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8)
    mask[:, -2:] = 0.0
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids, mask), model(ids, mask), **TOLERANCE)
    graph = optimized_graph(tmp_path)
    assert graph.count("aten.scaled_dot_product_attention.default(") == 2  # one per layer
    assert "aten._softmax" not in graph
    log = (tmp_path / "estuary" / "debug.log").read_text()
    assert "pattern_fusion_pass: 2 attention(s) fused" in log
    # Each layer computes the same additive mask from the padding mask: computed once now.
    assert graph.count("torch.ops.aten.rsub.Scalar(") == 1
    assert "4 repeated computation(s) made once" in log


def test_pattern_fusion_pass_runs_rms_norms_and_linears_whole(tmp_path):
    graph, log = run_llama(tmp_path)
    # LlamaBlock: two RMSNorms (eps a Python constant), the second after the residual Add;
    # seven projections.
    assert graph.count("torch.ops.estuary.rms_norm.default(") == 1
    assert graph.count("torch.ops.estuary.add_rms_norm.default(") == 1
    assert graph.count("torch.ops.aten.linear.default(") == 7 and "aten.rsqrt" not in graph
    assert "7 decomposed linear/matmul(s) made whole, 2 RMSNorm(s) into Estuary's kernel (1 with the residual Add)" in log


def test_pattern_fusion_pass_runs_the_gated_mlp_product_as_one_kernel(tmp_path):
    graph, log = run_llama(tmp_path)
    assert graph.count("torch.ops.estuary.swiglu.default(") == 1 and "aten.silu" not in graph
    assert "1 SiLU-gated product(s) into Estuary's kernels" in log
    # LlamaBlock's cos and sin are buffers indexed by position: nothing proves that their two
    # halves are equal, so the kernel reads them whole.
    assert "2 rotary embedding(s)" in log and "aten.neg" not in graph
    assert graph.count("torch.ops.estuary.rotary_embedding.default(") == 2


class RotaryProjections(torch.nn.Module):
    """q and k rotated as transformers' Llama does: tables computed in forward from duplicated
    angles and scaled; q stays a transposed view of its projection ([B, S, H, D] in memory),
    k is made contiguous."""

    def __init__(self, hidden=64, heads=4, scaling=0.5):
        super().__init__()
        self.heads, self.size, self.scaling = heads, hidden // heads, scaling
        self.q, self.k = torch.nn.Linear(hidden, hidden), torch.nn.Linear(hidden, hidden)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, self.size, 2).float() / self.size))

    def forward(self, x, positions):
        batch, length, _ = x.shape
        freqs = positions[:, :, None].float() * self.inv_freq
        angles = torch.cat([freqs, freqs], dim=-1)
        cos, sin = (angles.cos() * self.scaling).unsqueeze(1), (angles.sin() * self.scaling).unsqueeze(1)
        q = self.q(x).view(batch, length, self.heads, self.size).transpose(1, 2)
        k = self.k(x).view(batch, length, self.heads, self.size).transpose(1, 2).contiguous()
        half = self.size // 2

        def rotate_half(t):
            return torch.cat([-t[..., half:], t[..., :half]], dim=-1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


@pytest.mark.parametrize("dynamic", [False, True])
def test_pattern_fusion_pass_runs_rotary_embeddings_as_estuarys_kernel(tmp_path, dynamic):
    model = RotaryProjections().eval()
    compiled = torch.compile(model, backend=et.backend(mode="fx", debug_dir=str(tmp_path)), dynamic=dynamic)
    with torch.no_grad():
        for batch, length in [(2, 5), (3, 7)]:
            x, positions = torch.randn(batch, length, 64), torch.arange(length).repeat(batch, 1) + 3
            for result, expected in zip(compiled(x, positions), model(x, positions)):
                torch.testing.assert_close(result, expected, **TOLERANCE)
                assert result.stride() == expected.stride()  # the layout the graph was traced with
    log = (tmp_path / "estuary" / "debug.log").read_text()
    assert "2 rotary embedding(s)" in log
    graph = optimized_graph(tmp_path)
    assert graph.count("torch.ops.estuary.rotary_embedding.default(") == 2 and "aten.neg" not in graph
    # q is read in its projection's layout, k as it is: no copy of either.
    returned = returned_graph(tmp_path)
    assert returned.count("estuary_rotary_embedding_heads_inner(") == 1
    assert returned.count("estuary_rotary_embedding(") == 1


def test_lowering_binds_every_call(tmp_path):
    run_llama(tmp_path)
    returned = returned_graph(tmp_path)
    assert "torch.ops." not in returned  # no dispatcher overloads, no custom-op layers
    assert returned.count("estuary_rms_norm(") == 1 and returned.count("estuary_swiglu(") == 1
    assert returned.count("estuary_rotary_embedding_heads_inner") == 2
    log = (tmp_path / "estuary" / "debug.log").read_text()
    assert "lowering: 5 Estuary op(s) (0 of them as PyTorch formulas" in log
    assert "aten_view_default" not in returned and "aten_transpose_int" not in returned  # all reinterpreted


def lowered(fn, *inputs):
    """fn traced to an ATen graph with fake values (as AOT hands FX mode its graphs), lowered."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from estuary.torch.fx_lowering import lower_calls
    gm = make_fx(fn, tracing_mode="fake")(*inputs)
    return gm, lower_calls(gm)


def test_lowering_makes_views_of_known_layout_by_reinterpreting_memory():
    def fn(x, w):
        y = torch.mm(x, w)               # a fresh contiguous result
        q, k = y.split(4, dim=1)          # pieces of a view op with several results
        written = y.view(2, 4, 8)
        written.add_(1)                   # a write through a view: the view op stays
        return q.t() * 2, k.unsqueeze(0) + 1, x.view(16, 2)[1:]  # x: an input, whose layout Dynamo guards
    x, w = torch.randn(8, 4), torch.randn(4, 8)
    gm, log = lowered(fn, x, w)
    code = gm.code
    assert "reinterpret_tensor" in code and "split" not in code
    # The written view stays, and x's view and slice, which the graph returns.
    assert code.count("aten_view_default(") == 2 and "aten_slice_Tensor(" in code, code
    assert "4 view(s) made by reinterpreting" in log  # q, k, q.t(), k.unsqueeze(0)
    for got, expected in zip(gm(x, w), fn(x, w)):
        torch.testing.assert_close(got, expected)


def test_lowering_drops_copies_to_the_layout_a_tensor_has():
    def copies(x, w):
        y = torch.mm(x, w).t().t()        # contiguous, known to be
        return y.clone(memory_format=torch.contiguous_format) * 2, torch.mm(x, w).t().contiguous() + 1

    def written_copy(x, w):
        y = torch.mm(x, w)
        copy = y.clone(memory_format=torch.contiguous_format)
        copy.add_(1)
        return copy * y

    def returned_copy(x, w):
        y = torch.mm(x, w)
        return y.clone(memory_format=torch.contiguous_format).view(4, 16), y
    x, w = torch.randn(8, 4), torch.randn(4, 8)
    gm, log = lowered(copies, x, w)
    assert "1 copy(ies) to a layout the tensor had dropped" in log  # not the transposed one
    for got, expected in zip(gm(x, w), copies(x, w)):
        torch.testing.assert_close(got, expected)
    gm, log = lowered(written_copy, x, w)
    assert "0 copy(ies)" in log
    torch.testing.assert_close(gm(x, w), written_copy(x, w))
    gm, log = lowered(returned_copy, x, w)
    assert "0 copy(ies)" in log  # what the graph returns must not alias
    view, y = gm(x, w)
    assert view.untyped_storage().data_ptr() != y.untyped_storage().data_ptr()


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pooling_runs_estuarys_kernel_unless_its_indices_are_read(tmp_path, ceil_mode):
    class Pools(torch.nn.Module):
        def forward(self, x):
            pooled = torch.nn.functional.max_pool2d(x.relu(), 3, 2, 1, ceil_mode=ceil_mode)
            values, indices = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
            return pooled.flatten(1).sum(1), values, indices  # a view of the pooling's result, reinterpreted

    compiled = torch.compile(Pools(), backend=et.backend(mode="fx", debug_dir=str(tmp_path)))
    x = torch.randn(2, 8, 15, 17)
    with_nan = x.clone()
    with_nan[1, 3, 4, 5] = float("nan")  # PyTorch pools NaN to NaN
    with torch.no_grad():
        for inputs in (x, with_nan):
            for got, expected in zip(compiled(inputs), Pools()(inputs)):
                torch.testing.assert_close(got, expected, equal_nan=True)
    assert "1 ATen op(s) run by Estuary's faster kernel, 1 view(s) made by reinterpreting" in \
        (tmp_path / "estuary" / "debug.log").read_text()
    assert returned_graph(tmp_path).count("aten_max_pool2d_with_indices_default(") == 1  # the one whose indices are returned


def test_estuary_ops_run_estuarys_kernels_and_fall_back_to_pytorch():
    x, residual, gamma = torch.randn(3, 5, 64), torch.randn(3, 5, 64), torch.randn(64)

    def formula(x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * gamma
    torch.testing.assert_close(torch.ops.estuary.rms_norm(x, gamma, 1e-5), formula(x), **TOLERANCE)
    y, total = torch.ops.estuary.add_rms_norm_tensor_eps(x, residual, gamma, torch.tensor(1e-5, dtype=torch.float64))
    torch.testing.assert_close(total, x + residual, **TOLERANCE)
    torch.testing.assert_close(y, formula(x + residual), **TOLERANCE)
    # Other dtypes and tensors that need gradients take PyTorch's formula.
    torch.testing.assert_close(torch.ops.estuary.rms_norm(x.double(), gamma.double(), 1e-5), formula(x).double(),
                               **TOLERANCE)
    needs_grad = x.clone().requires_grad_()
    assert torch.ops.estuary.rms_norm(needs_grad, gamma, 1e-5).requires_grad


def test_rotary_and_swiglu_ops_run_estuarys_kernels_and_fall_back_to_pytorch():
    angles = torch.randn(1, 6, 8)
    cos, sin = angles.cos(), angles.sin()
    full_cos, full_sin = torch.cat([cos, cos], -1).unsqueeze(1), torch.cat([sin, sin], -1).unsqueeze(1)

    def rotated(x):
        return x * full_cos + torch.cat([-x[..., 8:], x[..., :8]], -1) * full_sin
    contiguous = torch.randn(2, 3, 6, 16)
    heads_inner = torch.randn(2, 6, 3, 16).transpose(1, 2)  # a projection's q: [B, S, H, D] in memory
    strided = torch.randn(2, 3, 16, 6).transpose(2, 3)  # neither: PyTorch's formula
    whole_cos, whole_sin = torch.randn(1, 6, 16), torch.randn(1, 6, 16)  # any tables, read whole

    def rotated_whole(x):
        return x * whole_cos.unsqueeze(1) + torch.cat([-x[..., 8:], x[..., :8]], -1) * whole_sin.unsqueeze(1)
    for x in (contiguous, heads_inner, strided, contiguous.double()):
        for tables, expected in (((cos, sin), rotated(x)), ((whole_cos, whole_sin), rotated_whole(x))):
            tables = tuple(t.to(x.dtype) for t in tables)
            result = torch.ops.estuary.rotary_embedding(x, *tables)
            torch.testing.assert_close(result, expected.to(x.dtype), **TOLERANCE)
            if x is not strided:
                assert result.stride() == x.stride()
    a, b = torch.randn(3, 5, 32), torch.randn(3, 5, 32)
    torch.testing.assert_close(torch.ops.estuary.swiglu(a, b), torch.nn.functional.silu(a) * b, **TOLERANCE)
    torch.testing.assert_close(torch.ops.estuary.swiglu(a.double(), b.double()),
                               torch.nn.functional.silu(a.double()) * b.double(), **TOLERANCE)


def test_estuary_ops_name_the_op_and_the_shapes_they_expect():
    x, tables = torch.randn(2, 3, 6, 16), torch.randn(1, 5, 8)  # 5 positions for a sequence of 6
    with pytest.raises(EstuaryError, match=r"torch\.ops\.estuary\.rotary_embedding\.default.*"
                                           r"the caches are \[2,6,8\].*got f32\[1,5,8\]"):
        torch.ops.estuary.rotary_embedding(x, tables, tables)


def test_dynamic_batch_and_sequence_sizes_compile_once():
    model = BertEncoder().eval()
    graphs = []

    def backend(gm, example_inputs, inner=et.backend(mode="fx")):
        compiled = inner(gm, example_inputs)
        graphs.append(gm)
        return compiled

    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for batch, seq in [(2, 8), (3, 5), (2, 11)]:
            ids = torch.randint(0, 100, (batch, seq))
            mask = torch.ones(batch, seq)
            mask[:, -2:] = 0.0
            torch.testing.assert_close(compiled(ids, mask), model(ids, mask), **TOLERANCE)
    assert len(graphs) == 1


def test_input_inplace_pass_turns_indexed_buffer_writes_into_view_copies(tmp_path):
    from test_torch_ge import SlotCache

    eager, model = SlotCache(), SlotCache()
    compiled = torch.compile(model, backend=et.backend(mode="fx", debug_dir=str(tmp_path)))
    with torch.no_grad():
        for _ in range(2):
            k, block = torch.randn(2, 4), torch.randn(2, 2, 4)
            torch.testing.assert_close(compiled(k, block), eager(k, block), **TOLERANCE)
            torch.testing.assert_close(model.cache, eager.cache, **TOLERANCE)
    graph = optimized_graph(tmp_path)
    assert "scatter" not in graph
    assert graph.count("torch.ops.aten.copy_.default(select") == 2
    assert graph.count("torch.ops.aten.copy_.default(slice") == 1


@pytest.mark.parametrize("fn", [lambda y: y[..., 1:] - y[..., :-1], lambda y: y.t() + y,
                                lambda y: torch.where(y > 0, y, y.shape[0] * y)],
                         ids=["shifted", "transposed", "with_a_size_argument"])
def test_inplace_pass_keeps_ops_out_of_place_when_an_argument_overlaps_the_written_one(fn):
    # In place, the op would overwrite elements it still has to read (torch's reinplace alone
    # gives a wrong answer for the first and an error for the second).
    def model(x):
        return fn(x * 2)

    torch._dynamo.reset()
    x = torch.randn(4, 4)
    torch.testing.assert_close(torch.compile(model, backend=et.backend(mode="fx"), dynamic=True)(x), model(x))


def test_input_inplace_pass_keeps_a_copy_whose_result_is_returned():
    # aten.copy_ returns its destination; when the graph returns the copy's result (generate
    # with a static cache does), the restored in-place op's input stands for it.
    from estuary.torch.fx_mode import input_inplace_pass

    graph = torch.fx.Graph()
    cache, update = graph.placeholder("cache"), graph.placeholder("update")
    added = graph.call_function(torch.ops.aten.add.Tensor, (cache, update))
    copied = graph.call_function(torch.ops.aten.copy_.default, (cache, added))
    graph.output((copied,))
    module = torch.fx.GraphModule({}, graph)
    assert "1 functional update(s) restored" in input_inplace_pass(module)
    cache_value, update_value = torch.zeros(3), torch.ones(3)
    (result,) = module(cache_value, update_value)
    assert result is cache_value and torch.equal(cache_value, torch.ones(3))


def test_dynamic_sizes_reach_ops_as_integers():
    # With dynamic=True, sizes are SymInt nodes (aten.sym_size.int) among the ops; torch's
    # reinplace fails on them unless the pass keeps them out of its way.
    torch._dynamo.reset()
    model = WindowAttention()
    compiled = torch.compile(model, backend=et.backend(mode="fx"), dynamic=True)
    with torch.no_grad():
        for size in (4, 6):
            x = torch.randn(2, size, size, 8, generator=torch.Generator().manual_seed(size))
            torch.testing.assert_close(compiled(x), model(x))
