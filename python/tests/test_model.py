"""The Python package against NumPy: building, running, errors."""
import os
import subprocess

import numpy as np
import pytest

import estuary

BROADCAST_CHAIN = """graph @g(%x: f32[batch,3], %b: f32[3]) {
  %s = Add(%x, %b) : f32[batch,3]
  %m = Mul(%s, %s) : f32[batch,3]
  %d = Sub(%m, %b) : f32[batch,3]
  return %d
}
"""


def test_model_matches_numpy_for_several_batch_sizes():
    model = estuary.Model(estuary.Graph.parse(BROADCAST_CHAIN))
    rng = np.random.default_rng(0)
    b = rng.standard_normal(3).astype(np.float32)
    for batch in (1, 4, 7):
        x = rng.standard_normal((batch, 3)).astype(np.float32)
        (y,) = model.run({"x": x, "b": b})
        np.testing.assert_allclose(y, (x + b) ** 2 - b, rtol=1e-6)


def test_inputs_and_outputs_describe_symbolic_dims():
    model = estuary.Model(estuary.Graph.parse(BROADCAST_CHAIN))
    assert model.inputs[0] == {"name": "x", "dtype": "f32", "shape": ["batch", 3], "mutable": False}
    assert model.outputs[0]["shape"] == ["batch", 3]


def test_list_inputs_and_non_contiguous_arrays():
    model = estuary.Model(estuary.Graph.parse(BROADCAST_CHAIN))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, :3]  # not C-contiguous
    b = np.ones(3, np.float32)
    (y,) = model.run([x, b])
    np.testing.assert_allclose(y, (x + b) ** 2 - b)


def test_arrays_that_went_through_pickle_are_taken_and_byte_swapped_ones_refused():
    import pickle
    model = estuary.Model(estuary.Graph.parse(BROADCAST_CHAIN))
    x = pickle.loads(pickle.dumps(np.ones((2, 3), np.float32)))  # a dtype object of its own, as Ray hands over
    b = pickle.loads(pickle.dumps(np.ones(3, np.float32)))
    np.testing.assert_allclose(model.run({"x": x, "b": b})[0], np.full((2, 3), 3.0))
    with pytest.raises(TypeError, match="input 'x': expected dtype f32, got >f4"):
        model.run({"x": x.astype(">f4"), "b": b})


def test_errors_name_the_input_and_have_the_types_python_callers_expect():
    model = estuary.Model(estuary.Graph.parse(BROADCAST_CHAIN))
    b = np.ones(3, np.float32)
    # A wrong dtype or kind is a TypeError, a wrong shape, name or count a ValueError; all are
    # EstuaryErrors.
    with pytest.raises(TypeError, match="input 'x'.*expected dtype f32") as raised:
        model.run({"x": np.ones((2, 3), np.float64), "b": b})
    assert isinstance(raised.value, estuary.EstuaryError) and isinstance(raised.value, estuary.InputTypeError)
    with pytest.raises(TypeError, match="input 'x': expected dtype f32, got object"):
        model.run({"x": object(), "b": b})
    with pytest.raises(ValueError, match="input 'b' was not given") as raised:
        model.run({"x": np.ones((2, 3), np.float32)})
    assert isinstance(raised.value, estuary.EstuaryError) and isinstance(raised.value, estuary.InputValueError)
    with pytest.raises(ValueError, match=r"input 'x' \(#0\): expected f32\[batch,3\], got f32\[2,4\]"):
        model.run({"x": np.ones((2, 4), np.float32), "b": b})
    with pytest.raises(ValueError, match="the model has no input named 'y' \\(inputs: x, b\\)"):
        model.run({"y": np.ones((2, 3), np.float32), "b": b})
    with pytest.raises(ValueError, match="the model takes 2 inputs, 1 were given"):
        model.run([b])
    with pytest.raises(ValueError, match=r"input 'b' \(#1\): expected f32\[3\], got f32\[4\]"):
        model.run({"x": np.ones((2, 3), np.float32), "b": np.ones(4, np.float32)})


def test_read_only_inputs_are_read_in_place(tmp_path):
    model = estuary.Model(estuary.Graph.parse(BROADCAST_CHAIN))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    x.flags.writeable = False
    np.save(tmp_path / "b.npy", np.full(3, 0.5, np.float32))
    b = np.load(tmp_path / "b.npy", mmap_mode="r")  # a read-only memory map
    broadcast = np.broadcast_to(np.float32(2), (2, 3))  # read-only, strides of 0: copied, then read
    for inputs in ({"x": x, "b": b}, {"x": broadcast, "b": b}):
        (y,) = model.run(inputs)
        np.testing.assert_allclose(y, (inputs["x"] + 0.5) ** 2 - 0.5)


def test_an_input_updated_in_place_must_be_a_writable_contiguous_array():
    model = estuary.Model(estuary.Graph.parse("""graph @g(%x: f32[2], %state: f32[2] mutable) {
  %s = Add(%state, %x) : f32[2]
  return %s
  update %state = %s
}
"""))
    state = np.zeros(2, np.float32)
    state.flags.writeable = False
    with pytest.raises(ValueError, match="input 'state' is updated in place by the model, but the array given is read-only"):
        model.run({"x": np.ones(2, np.float32), "state": state})
    # A strided view would be copied, and the update would go to the copy.
    strided = np.zeros(4, np.float32)[::2]
    with pytest.raises(ValueError, match="input 'state' is updated in place by the model, but the array given is not "
                                         "C-contiguous"):
        model.run({"x": np.ones(2, np.float32), "state": strided})
    state = np.zeros(2, np.float32)
    model.run({"x": np.ones(2, np.float32), "state": state})
    np.testing.assert_array_equal(state, [1, 1])  # updated in place


def test_one_model_runs_from_eight_threads_with_mixed_shapes():
    """What a web server's thread pool does: every result is the one its own inputs give
    (one Model used to hold one run context, and threads read each other's outputs)."""
    import concurrent.futures
    model = estuary.Model(estuary.Graph.parse("""graph @g(%x: f32[rows,32], %w: f32[32,32]) {
  %m = MatMul(%x, %w) : f32[rows,32]
  %s = Softmax(%m) : f32[rows,32]
  return %s
}
"""))
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 32)).astype(np.float32)
    cases = [rng.standard_normal((rows, 32)).astype(np.float32) for rows in (1, 3, 7, 16, 33) * 40]
    expected = [model.run({"x": x, "w": w})[0] for x in cases]  # one at a time

    def run(k):
        return model.run({"x": cases[k], "w": w})[0]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, range(len(cases))))
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got, want)


def test_huge_shapes_are_refused_with_a_resource_limit_error_and_the_model_runs_on():
    limits = estuary.default_limits()
    assert set(limits) == {"tensor", "plan", "run", "plans"}
    assert 0 < limits["tensor"] <= limits["plan"] <= limits["run"]
    with pytest.raises(estuary.ResourceLimitError, match=r"input 'x' f32\[1099511627776\] needs 4.0 TiB") as raised:
        estuary.Model(estuary.Graph.parse("graph @g(%x: f32[1099511627776]) {\n  %y = Relu(%x)\n  return %y\n}"))
    assert isinstance(raised.value, estuary.EstuaryError) and isinstance(raised.value, MemoryError)

    # The Expand's shape is an input: only the run can refuse it, before allocating anything.
    model = estuary.Model(estuary.Graph.parse(
        "graph @g(%x: f32[1], %s: i64[2]) {\n  %y = Expand(%x, %s)\n  return %y\n}"))
    x = np.array([2.5], np.float32)
    with pytest.raises(estuary.ResourceLimitError, match=r"f32\[1048576,1048576\] needs 4.0 TiB"):
        model.run({"x": x, "s": np.array([1 << 20, 1 << 20])})
    (y,) = model.run({"x": x, "s": np.array([2, 3])})
    np.testing.assert_array_equal(y, np.full((2, 3), 2.5, np.float32))


def test_limits_are_set_per_model():
    text = "graph @g(%x: f32[64,64]) {\n  %y = Exp(%x)\n  return %y\n}"
    with pytest.raises(estuary.ResourceLimitError, match=r"more than the tensor limit of 1.0 KiB"):
        estuary.Model(estuary.Graph.parse(text), limits={"tensor": "1KiB"})
    model = estuary.Model(estuary.Graph.parse(text), limits={"tensor": 1 << 20, "plans": 4})
    np.testing.assert_allclose(model.run([np.zeros((64, 64), np.float32)])[0], 1.0)
    with pytest.raises(ValueError, match="limits has no key 'tensors'"):
        estuary.Model(estuary.Graph.parse(text), limits={"tensors": "1KiB"})
    with pytest.raises(estuary.EstuaryError, match="'lots' is not a size"):
        estuary.Model(estuary.Graph.parse(text), limits={"run": "lots"})


def test_nonzero_output_has_the_length_of_each_run():
    model = estuary.Model(estuary.Graph.parse("""graph @g(%x: i32[2,3]) {
  %y = NonZero(%x)
  return %y
}
"""))
    for x in (np.array([[0, 7, 0], [5, 0, 9]], np.int32), np.zeros((2, 3), np.int32)):
        (y,) = model.run({"x": x})
        np.testing.assert_array_equal(y, np.stack(np.nonzero(x)))


def test_graph_optimize_and_text(tmp_path):
    graph = estuary.Graph.parse("""graph @g(%x: f32[4]) {
  %i = Identity(%x) : f32[4]
  %a = Add(%i, %x) : f32[4]
  %dead = Exp(%a) : f32[4]
  return %a
}
""")
    graph.optimize("canonicalize,cse,dce")
    assert graph.op_counts() == {"Add": 1}
    path = tmp_path / "g.estir"
    graph.save(str(path))
    assert estuary.Graph.load(str(path)).text() == graph.text()


def test_parse_errors_are_python_exceptions():
    with pytest.raises(estuary.EstuaryError, match="<text>:2"):
        estuary.Graph.parse("graph @g(%x: f32[4]) {\n  %y = Neg(%x : f32[4]\n  return %y\n}\n")


def test_offline_model_round_trip(tmp_path):
    """A model saved by `estuary build` loads in Python and gives the same outputs."""
    ir = tmp_path / "g.est"
    ir.write_text(BROADCAST_CHAIN)
    eom = tmp_path / "g.eom"
    subprocess.run([os.environ["ESTUARY_CLI"], "build", str(ir), "-o", str(eom), "--quiet"], check=True)
    loaded = estuary.Model(str(eom))
    built = estuary.Model(str(ir))
    x = np.random.default_rng(1).standard_normal((3, 3)).astype(np.float32)
    b = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(loaded.run([x, b])[0], built.run([x, b])[0])
