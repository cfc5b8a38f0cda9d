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


def test_tune_kernels_times_the_choices_and_keeps_them(tmp_path):
    weights = ((np.arange(64 * 32) % 9) * 0.125 - 0.5).astype(np.float32)
    path = tmp_path / "linear.testmodel"
    path.write_text("# estuary test model\n"
                    "graph @linear(%x: f32[1,64]) {\n"
                    "  %w = Constant() {value = tensor<f32[64,32]> [" + ", ".join(map(str, weights)) + "]} : f32[64,32]\n"
                    "  %y = MatMul(%x, %w) : f32[1,32]\n"
                    "  return %y\n"
                    "}\n")
    cache, output = tmp_path / "timing.cache", str(tmp_path / "tuned.eom")
    rules = estuary.convert(str(path))
    assert rules.report()["tuning"] == []  # off unless asked
    tuned = estuary.convert(str(path), output, tune_kernels=True, timing_cache=str(cache))
    [line] = tuned.report()["tuning"]
    assert "(measured: cpu:gemv " in line and "onednn:gemm:jit" in line
    assert cache.exists()
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64)
    np.testing.assert_allclose(tuned.run([x])[0], x @ weights.reshape(64, 32), rtol=1e-5, atol=1e-5)
    # The offline model keeps the choice.
    [loaded_line] = estuary.Model(output, threads=tuned.num_threads).report()["tuning"]
    assert "from the offline model" in loaded_line
    assert tuned.report()["warnings"] == []
    # A cache that does not read back whole is ignored with a warning, and measured afresh.
    cache.write_text("# estuary timing cache 1\ncut short")
    again = estuary.convert(str(path), tune_kernels=True, timing_cache=str(cache))
    [warning] = again.report()["warnings"]
    assert "timing.cache:2: expected 'key<TAB>tactic<TAB>times'" in warning and "ignored" in warning
    assert "(measured: " in again.report()["tuning"][0]


@pytest.mark.parametrize("input_shapes", [{"x": ["1~3", 4]}, {"x": [(1, 3), 4]}, "x:1~3,4"])
def test_input_shape_ranges_as_the_command_line_takes_them(model_file, tmp_path, input_shapes):
    output = str(tmp_path / "ranged.eom")
    model = estuary.convert(model_file, output, input_shapes=input_shapes)
    for batch in (1, 3):
        x = np.linspace(-1, 1, 4 * batch, dtype=np.float32).reshape(batch, 4)
        np.testing.assert_array_equal(model.run({"x": x})[0], expected(x))
    # The range is kept in the offline model and enforced when it runs.
    with pytest.raises(ValueError, match="accepts 1~3"):
        estuary.Model(output).run({"x": np.zeros((4, 4), np.float32)})


def test_input_shapes_that_are_malformed_are_refused_naming_the_input(model_file):
    with pytest.raises(ValueError, match="the range 3~1 is empty"):
        estuary.convert(model_file, input_shapes={"x": ["3~1", 4]})
    with pytest.raises(TypeError, match=r"input_shapes\['x'\]"):
        estuary.convert(model_file, input_shapes={"x": [1.5, 4]})
    with pytest.raises(TypeError, match="input_shapes must be a dict"):
        estuary.convert(model_file, input_shapes=[1, 4])


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


SCALE_MODEL = """# estuary test model
# weights w 4
graph @s(%x: f32[batch,4]) {
  %w = Constant() {value = tensor<f32[4]> [0, 0, 0, 0]} : f32[4]
  %y = Mul(%x, %w) : f32[batch,4]
  return %y
}
"""


def test_directories_path_lists_and_load_options(tmp_path):
    weights = np.array([1, 2, 3, 4], np.float32)
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "model.testmodel").write_text(SCALE_MODEL)
    weights.tofile(saved / "model.testweights")
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(estuary.Model(saved).run([x])[0], x * weights)
    # A model given as its parts; os.PathLike works as str does.
    (tmp_path / "s.testmodel").write_text(SCALE_MODEL)
    (weights * 2).tofile(tmp_path / "elsewhere.testweights")
    parts = [tmp_path / "s.testmodel", tmp_path / "elsewhere.testweights"]
    np.testing.assert_array_equal(estuary.convert(parts).run([x])[0], x * weights * 2)
    with pytest.raises(estuary.EstuaryError, match="the weights of 'w' are missing"):
        estuary.Model(tmp_path / "s.testmodel")
    model = estuary.Model(tmp_path / "s.testmodel", weights=str(tmp_path / "elsewhere.testweights"))
    np.testing.assert_array_equal(model.run([x])[0], x * weights * 2)
    graph = estuary.Graph.import_model(saved, frontend_options={"graph-name": "renamed"}, outputs=["y"])
    assert graph.name == "renamed"
    with pytest.raises(estuary.EstuaryError, match="the test frontend has no option 'colour'"):
        estuary.Graph.import_model(saved, frontend_options={"colour": "red"})
