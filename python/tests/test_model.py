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


def test_errors_name_the_input():
    model = estuary.Model(estuary.Graph.parse(BROADCAST_CHAIN))
    with pytest.raises(estuary.EstuaryError, match="input 'x'.*expected dtype f32"):
        model.run({"x": np.ones((2, 3), np.float64), "b": np.ones(3, np.float32)})
    with pytest.raises(estuary.EstuaryError, match="input 'b' was not given"):
        model.run({"x": np.ones((2, 3), np.float32)})
    with pytest.raises(estuary.EstuaryError, match=r"input 'x' \(#0\): expected f32\[batch,3\], got f32\[2,4\]"):
        model.run({"x": np.ones((2, 4), np.float32), "b": np.ones(3, np.float32)})


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
