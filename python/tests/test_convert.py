"""estuary.convert, Graph.import_model and Model on a framework's file, through the test
frontend plugin (IR text under a header line; tests/plugins/test_frontend.cpp). The ONNX
frontend's conversions of real models are in test_onnx_*.py."""
import os

import numpy as np
import pytest

import estuary

TEST_MODEL = """# estuary test model
graph @m(%x: f32[batch,4]) {
  %w = Constant() {value = tensor<f32[4]> [1, 2, 3, 4]} : f32[4]
  %y = Mul(%x, %w) : f32[batch,4]
  %i = Identity(%y) : f32[batch,4]
  %z = Relu(%i) : f32[batch,4]
  return %z
}
"""


@pytest.fixture(autouse=True)
def test_frontend_plugin(monkeypatch):
    monkeypatch.setenv("ESTUARY_PLUGIN_PATH", os.environ["ESTUARY_TEST_PLUGIN_DIR"])


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "m.testmodel"
    path.write_text(TEST_MODEL)
    return str(path)


def expected(x):
    return np.maximum(x * np.array([1, 2, 3, 4], np.float32), 0)


def test_convert_fixes_shapes_optimizes_builds_and_saves(model_file, tmp_path):
    output = str(tmp_path / "m.eom")
    model = estuary.convert(model_file, output, input_shapes={"x": [2, 4]}, pipeline="O2")
    assert model.inputs[0]["shape"] == [2, 4]
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(model.run({"x": x})[0], expected(x))
    # The saved offline model runs the same.
    np.testing.assert_array_equal(estuary.Model(output).run([x])[0], expected(x))


def test_model_converts_a_framework_file(model_file):
    model = estuary.Model(model_file)
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 6
    np.testing.assert_array_equal(model.run([x])[0], expected(x))


def test_import_model_then_optimize_by_pipeline_name(model_file):
    graph = estuary.Graph.import_model(model_file, framework="test")
    assert graph.op_counts()["Identity"] == 1
    graph.optimize("O2", disable=["fuse_add_rms_norm"])
    assert "Identity" not in graph.op_counts()


def test_errors_name_what_is_wrong(model_file, tmp_path):
    with pytest.raises(estuary.EstuaryError, match="no frontend named 'tset'"):
        estuary.convert(model_file, framework="tset")
    with pytest.raises(estuary.EstuaryError, match="the graph has no input 'y'"):
        estuary.convert(model_file, input_shapes={"y": [1, 4]})
    other = tmp_path / "other.bin"
    other.write_bytes(b"\x00\x01")
    with pytest.raises(estuary.EstuaryError, match="no frontend supports this input"):
        estuary.Model(str(other))
    unsupported = tmp_path / "u.testmodel"
    unsupported.write_text("# estuary test model\n# unsupported Foo a\n")
    with pytest.raises(estuary.UnsupportedOpsError, match="Foo \\(opset 1\\): 'a'"):
        estuary.convert(str(unsupported))
