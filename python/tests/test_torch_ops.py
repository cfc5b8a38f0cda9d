"""ATen ops that transformers and torchvision models produce, each in a small function
compiled in graph-engine mode with fallback="error" (so that nothing runs in PyTorch), against
eager PyTorch."""
import warnings

import pytest
import torch

import estuary.torch as et
from torch_models import WindowAttention

GE = et.backend(mode="ge", fallback="error")


def check(fn, *inputs, dynamic=False):
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=GE, dynamic=dynamic, fullgraph=True)
    with torch.no_grad():
        expected = fn(*inputs)
        actual = compiled(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = actual if isinstance(actual, tuple) else (actual,)
    for e, a in zip(expected, actual):
        assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, a.shape, e.dtype, e.shape)
        torch.testing.assert_close(a, e)


x = torch.randn(3, 5, generator=torch.Generator().manual_seed(0))
y = torch.randn(3, 5, generator=torch.Generator().manual_seed(1))
ints = torch.tensor([[1, 2, 3], [4, 5, 6]])


@pytest.mark.parametrize("fn", [
    lambda a, b: (a == b, a != b, a < b, a <= b, a > b, a >= b),
    lambda a, b: (a > 0.5, a <= 0, a.eq(0), a.ne(1.5)),
    lambda a, b: (torch.maximum(a, b), torch.minimum(a, b)),
    lambda a, b: ((a > 0) & (b > 0), (a > 0) | (b > 0), ~(a > 0), torch.logical_not(b > 0)),
], ids=["compare_tensors", "compare_scalars", "min_max", "bool_logic"])
def test_elementwise_comparisons_and_logic(fn):
    check(fn, x, y)


def test_comparison_of_int_and_float_promotes():
    check(lambda i, f: (i > f[:2, :3], i.float() == i), ints, x)


def test_cumsum_roll_pad_gather():
    index = torch.tensor([[0, 4, 1], [2, 2, 3], [1, 0, 0]])
    check(lambda a: (a.cumsum(1), a.cumsum(0, dtype=torch.float64), torch.roll(a, 2, 1), torch.roll(a, (1, -2), (0, 1)),
                     torch.roll(a, 4), torch.nn.functional.pad(a, (1, 2, 0, 1), value=0.5),
                     torch.nn.functional.pad(a, (-1, 1)), torch.gather(a, 1, index)), x)


def test_fills():
    check(lambda a: (a.new_ones(2, 3), a.new_zeros((4,)), a.new_full((2,), 7.0), torch.full_like(a, 3.0),
                     torch.ones_like(a), torch.zeros_like(a, dtype=torch.int64), torch.full((2, 2), 1.5) + a[:2, :2],
                     torch.scalar_tensor(2.5) * a), x)


def test_index_with_several_index_tensors():
    t = torch.randn(4, 5, 6, generator=torch.Generator().manual_seed(2))
    i = torch.tensor([0, 2, 3])
    j = torch.tensor([[1], [3]])
    check(lambda a: (a[i, i], a[:, i, i], a[i, :, i], a[j, i]), t)


def test_cat_leaves_out_a_legacy_empty_tensor():
    check(lambda a: torch.cat([torch.empty(0), a, a], dim=-2), x)


def test_symbolic_sizes_reach_the_comparisons_and_fills():
    check(lambda a: (a.new_ones(a.shape[0], 2) * (a[:, :2] > 0), torch.roll(a, 1, 1)), x, dynamic=True)


def test_sizes_passed_between_regions_are_run_time_inputs():
    torch._dynamo.reset()
    model = WindowAttention()
    compiled = torch.compile(model, backend=et.backend(mode="ge"), dynamic=True)
    with torch.no_grad():
        for size in (4, 6):
            x = torch.randn(2, size, size, 8, generator=torch.Generator().manual_seed(size))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                torch.testing.assert_close(compiled(x), model(x))
            assert not [w for w in caught if "runs eagerly" in str(w.message)]  # no region fell back


def test_as_strided_where_it_is_a_reshape():
    t = torch.randn(1, 32, 1, generator=torch.Generator().manual_seed(3))
    check(lambda a: torch.as_strided(a, [1, 32, 1, 1], [32, 1, 32, 32]).squeeze(-2) * 2, t)


def test_size_arithmetic_mod_pow_and_sym_sum():
    # Sizes as a windowed vision transformer computes them: padding to a multiple of the
    # window (Mod), window counts squared (**) and summed (torch.sym_sum).
    def padded_windows(a):
        blocks = a.shape[1] // 2
        pad = (4 - blocks % 4) % 4
        b = torch.nn.functional.pad(a, (0, 0, 0, pad * 2))
        return b.reshape(a.shape[0], -1, 4), torch.zeros(blocks ** 2 + pad)

    check(padded_windows, torch.randn(2, 6, 4), dynamic=True)


def test_a_tensor_made_in_forward_is_a_constant():
    # torch.tensor(...) inside forward is aten.lift_fresh_copy of a constant (Mistral, Qwen2
    # and T5 make their masks' fill values so).
    check(lambda a: a * torch.tensor(0.5) + torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), x)
