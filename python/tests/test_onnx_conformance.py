"""ONNX's own node test cases (onnx.backend.test.case.node: a model, inputs and expected
outputs for each operator), run through the ONNX frontend and the GE backend.

Every case whose ops the frontend translates is a claim, and must pass: a claimed op that
fails a case is a bug. Cases with an op the frontend does not translate, or with sequence
and optional values (which Estuary's tensors do not model), are skipped with the reason.
Claimed cases that fail today are listed with the reason in onnx_known_failures.txt and
run as strict expected failures, so each bug stays visible and counts as a failure in the
report. The pass count per op is printed at the end of the run (conftest.py) and written to
$ESTUARY_CONFORMANCE_REPORT when set.

Dropout in training mode draws a random mask; ONNX leaves the generator open and its expected
values are one NumPy stream, so those cases are checked for what the op promises instead:
every element dropped or scaled by 1 / (1 - ratio), the mask agreeing, and the share kept
within five standard deviations of 1 - ratio.

A 16-bit float output that misses ONNX's expected values passes only if it is at least as
near the exact result (the model evaluated in float64, exact_reference.py) as the expected
values are: those come from ONNX's reference evaluator rounding every step to 16 bits, and an
engine that computes inside in f32 is nearer the exact result, not wrong."""
import os
import warnings

import numpy as np
import pytest

import estuary

onnx = pytest.importorskip("onnx")
from onnx.backend.test.case.node import collect_testcases  # noqa: E402

import conformance_report  # noqa: E402
import exact_reference  # noqa: E402


def known_failures():
    path = os.path.join(os.path.dirname(__file__), "onnx_known_failures.txt")
    failures = {}
    with open(path) as listing:
        for line in listing:
            if line.strip() and not line.startswith("#"):
                name, reason = line.rstrip("\n").split("  ", 1)
                failures[name] = reason
    return failures


KNOWN_FAILURES = known_failures()

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the case generators divide by zero on purpose
    CASES = sorted(collect_testcases(None), key=lambda case: case.name)


def op_types(graph):
    types = set()
    for node in graph.node:
        types.add(node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}")
        for attribute in node.attribute:
            for subgraph in list(attribute.g.node and [attribute.g]) + list(attribute.graphs):
                types |= op_types(subgraph)
    return types


def is_plain_tensor(value):
    # A NumPy scalar (np.float32(1.0), the cases' spelling of a 0-d input) is a tensor too.
    return isinstance(value, (np.ndarray, np.generic)) and value.dtype != object


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_node_case(case, tmp_path, request):
    if case.name in KNOWN_FAILURES:
        request.applymarker(pytest.mark.xfail(strict=True, reason="known bug: " + KNOWN_FAILURES[case.name]))
    check_case(case, tmp_path, "cpu", conformance_report.record)


SIXTEEN_BIT = ("float16", "bfloat16")


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_node_case_on_the_reference_device(case, tmp_path):
    """The same cases on the reference device, the tests' oracle: it must pass every case it
    takes. It takes no 16-bit floats by design (it computes in f64 and is compared in f32/f64),
    so cases with them are not its to pass."""
    inputs, expected = case.data_sets[0] if case.data_sets else ([], [])
    if any(np.asarray(value).dtype.name in SIXTEEN_BIT for value in list(inputs) + list(expected)
           if is_plain_tensor(value)):
        pytest.skip("16-bit floats: the reference device computes in f32/f64")
    check_case(case, tmp_path, "reference", lambda ops, outcome: None)


def check_case(case, tmp_path, device, record):
    ops = sorted(op_types(case.model.graph))
    inputs, expected = case.data_sets[0] if case.data_sets else ([], [])
    if not all(is_plain_tensor(value) for value in list(inputs) + list(expected)):
        record(ops, "not claimed")
        pytest.skip("sequence or optional values: Estuary models tensors only")
    inputs, expected = [np.asarray(value) for value in inputs], [np.asarray(value) for value in expected]
    path = tmp_path / "model.onnx"
    onnx.save(case.model, str(path))
    try:
        model = estuary.convert(str(path), framework="onnx", device=device)
    except estuary.UnsupportedOpsError as error:
        record(ops, "not claimed")
        pytest.skip(str(error).split(": ", 1)[-1])
    except estuary.EstuaryError as error:
        if device == "reference" and "supports inputs" in str(error) and "f16" in str(error):
            pytest.skip("a 16-bit float inside the model: the reference device computes in f32/f64")
        raise
    try:
        names = [value.name for value in case.model.graph.input]
        feeds = {name: value for name, value in zip(names, inputs)}
        actual = model.run(feeds)
        assert len(actual) == len(expected), f"{len(actual)} outputs, expected {len(expected)}"
        if random_dropout(case, inputs):
            check_dropout_semantics(inputs, actual)
            record(ops, "passed")
            return
        for index, (got, want) in enumerate(zip(actual, expected)):
            assert got.dtype == want.dtype, f"output {index}: dtype {got.dtype}, expected {want.dtype}"
            assert got.shape == want.shape, f"output {index}: shape {got.shape}, expected {want.shape}"
            if want.dtype.name in SIXTEEN_BIT:
                check_sixteen_bit(case, inputs, index, got, want)
            elif want.dtype.kind in "fc":
                np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol, equal_nan=True,
                                           err_msg=f"output {index}")
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"output {index}")
    except BaseException:
        record(ops, "failed")
        raise
    record(ops, "passed")


def check_sixteen_bit(case, inputs, index, got, want):
    # bf16 expected values may be the reference's f32 results rounded to bf16, ours are rounded
    # from our own f32 results: the two may be one bf16 ulp (2^-7 relative) apart.
    rtol = max(case.rtol, 2.0**-7) if want.dtype.name == "bfloat16" else case.rtol
    try:
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=rtol, atol=case.atol,
                                   equal_nan=True, err_msg=f"output {index}")
    except AssertionError as mismatch:
        exact = exact_reference.exact_outputs(case.model, inputs)[index]
        ours, reference = exact_reference.max_error(got, exact), exact_reference.max_error(want, exact)
        if not ours <= reference:
            raise AssertionError(f"{mismatch}\noutput {index}: max error against the exact (float64) result "
                                 f"{ours:.6g}, the expected values' own {reference:.6g}") from None


def test_sixteen_bit_check_rejects_an_output_less_accurate_than_the_reference():
    case = next(case for case in CASES if case.name == "test_attention_4d_causal_bf16")
    inputs, expected = case.data_sets[0]
    want = expected[0]
    exact = exact_reference.exact_outputs(case.model, inputs)[0]
    # Rounded from the exact result, so nearer it than the reference: accepted although it
    # misses the reference's values.
    check_sixteen_bit(case, inputs, 0, exact.astype(want.dtype), want)
    off = (want.astype(np.float32) + 0.01).astype(want.dtype)
    with pytest.raises(AssertionError, match="against the exact"):
        check_sixteen_bit(case, inputs, 0, off, want)


def random_dropout(case, inputs):
    """Whether the case is a single Dropout in training mode with a non-zero ratio."""
    nodes = case.model.graph.node
    if len(nodes) != 1 or nodes[0].op_type != "Dropout" or len(inputs) != 3:
        return False
    ratio, training = inputs[1], inputs[2]
    return bool(training) and float(ratio) > 0


def check_dropout_semantics(inputs, actual):
    x, ratio = inputs[0].astype(np.float64), float(inputs[1])
    y = actual[0].astype(np.float64)
    assert y.shape == x.shape, f"output shape {y.shape}, expected {x.shape}"
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / (1 - ratio), rtol=1e-6, err_msg="kept elements are x / (1 - ratio)")
    if len(actual) > 1:
        mask = actual[1]
        assert mask.dtype == np.bool_ and mask.shape == x.shape, f"mask {mask.dtype}{mask.shape}"
        nonzero = x != 0
        np.testing.assert_array_equal(mask[nonzero], kept[nonzero], err_msg="mask marks the kept elements")
        kept = mask
    n, p = x.size, 1 - ratio
    spread = 5 * np.sqrt(n * p * (1 - p))
    assert abs(kept.sum() - n * p) <= spread, f"kept {kept.sum()} of {n} elements, expected {n * p:.1f} +- {spread:.1f}"


def test_dropout_check_rejects_a_deterministic_or_unscaled_output():
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    inputs = [x, np.float32(0.5), np.bool_(True)]
    with pytest.raises(AssertionError, match="kept"):
        check_dropout_semantics(inputs, [x])  # nothing dropped
    unscaled = np.where(np.arange(x.size).reshape(x.shape) % 2 == 0, x, 0)
    with pytest.raises(AssertionError, match="x / \\(1 - ratio\\)"):
        check_dropout_semantics(inputs, [unscaled])
