"""`estuary compare` (python/estuary/compare): Estuary's results compared node by node with ONNX
Runtime or with Estuary's own unoptimized f64 run on the reference device.

The planted fault: a plugin (tests/plugins/biased_tanh.cpp) gives the CPU a Tanh kernel that
adds 0.05; compare must name exactly that Tanh node as the first past the thresholds, with
every node before it within them, against both references. Without the plugin the same model
is clean. Real models: ResNet-50 (PyTorch, random seeded weights, exported to ONNX) is clean
against ONNX Runtime in f32, and its bf16 conversion drifts within bf16's thresholds; a
LLaMA-style block is clean against the f64 reference."""
import csv
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import environments
import estuary
import estuary.compare as compare

PLUGIN = os.path.join(os.environ["ESTUARY_TEST_PLUGIN_DIR"], "libestuary_test_biased_tanh.so")
EXAMPLES = environments.ROOT / "examples"


def write_planted_model(path):
    """x -> MatMul+Add -> Relu -> h; Mul(h, Sigmoid(h)) -> Tanh 'planted' -> MatMul+Add -> y. The Tanh
    reads a Mul of two computed values, so no fusion takes it into another node."""
    random = np.random.default_rng(7)
    weights = {
        "w1": random.standard_normal((16, 32)).astype(np.float32) * 0.3,
        "b1": random.standard_normal(32).astype(np.float32) * 0.1,
        "w2": random.standard_normal((32, 8)).astype(np.float32) * 0.3,
        "b2": random.standard_normal(8).astype(np.float32) * 0.1,
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["mm1"], name="fc1"),
        helper.make_node("Add", ["mm1", "b1"], ["fc1_out"], name="fc1_bias"),
        helper.make_node("Relu", ["fc1_out"], ["h"], name="relu"),
        helper.make_node("Sigmoid", ["h"], ["gate"], name="gate"),
        helper.make_node("Mul", ["h", "gate"], ["gated"], name="gated"),
        helper.make_node("Tanh", ["gated"], ["t"], name="planted"),
        helper.make_node("MatMul", ["t", "w2"], ["mm2"], name="fc2"),
        helper.make_node("Add", ["mm2", "b2"], ["y"], name="fc2_bias"),
    ]
    graph = helper.make_graph(nodes, "planted", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                              [numpy_helper.from_array(value, name) for name, value in weights.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)
    return path


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return str(write_planted_model(tmp_path_factory.mktemp("planted") / "planted.onnx"))


def run_cli(*args):
    """`estuary compare` in a process of its own (a loaded plugin stays for the process's life)."""
    environment = dict(os.environ, ESTUARY_PYTHON=sys.executable)
    return subprocess.run([os.environ["ESTUARY_CLI"], "compare", *map(str, args)], capture_output=True, text=True,
                          env=environment, timeout=600)


@pytest.mark.parametrize("reference", ["onnxruntime", "estuary-f64"])
def test_planted_fault_is_reported_at_that_node(planted, tmp_path, reference):
    report_path, csv_path, plot_path = tmp_path / "report.json", tmp_path / "report.csv", tmp_path / "errors.png"
    result = run_cli(planted, "--plugin", PLUGIN, "--reference", reference, "--json", report_path, "--csv", csv_path,
                     "--plot", plot_path)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    first = report["first_past_threshold"]
    assert (first["node"], first["op"], first["value"]) == ("planted", "Tanh", "t")
    # Its input is within the thresholds: the node itself is what drifts, and the report says so.
    assert [entry["value"] for entry in first["inputs"]] == ["gated"]
    assert first["inputs"][0]["past_threshold"] is None
    assert "the node itself drifts" in report["summary"]
    rows = report["nodes"]
    at = next(i for i, row in enumerate(rows) if row["value"] == "t")
    assert all(row["past_threshold"] is None for row in rows[:at])
    assert all(row["cosine"] > 0.99999 for row in rows[:at] if row["cosine"] is not None)
    assert rows[at]["max_abs"] == pytest.approx(0.05, rel=1e-3)
    assert "first past the thresholds: node 'planted' (Tanh)" in result.stdout
    with open(csv_path) as file:
        table = list(csv.DictReader(file))
    assert [row["value"] for row in table] == [row["value"] for row in rows]
    assert plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_clean_conversion_is_clean(planted, tmp_path):
    result = run_cli(planted, "--json", tmp_path / "report.json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["clean"] and report["first_past_threshold"] is None
    compared = [row for row in report["nodes"] if row["cosine"] is not None]
    # Every ONNX node's result Estuary computes is compared (fc1's MatMul and Add run fused,
    # so 'mm1' has no counterpart; fc2's likewise).
    assert {row["node"] for row in compared} >= {"relu", "gate", "gated", "planted", "fc2_bias"}
    assert "Clean: no node past the thresholds." in result.stdout


def test_reference_batches_within_the_memory_budget_give_the_same_figures(planted):
    whole = compare.compare(planted, reference="onnxruntime")
    one_at_a_time = compare.compare(planted, reference="onnxruntime", memory_budget=1)
    assert [row.figures for row in whole.rows] == [row.figures for row in one_at_a_time.rows]


def test_fused_node_reports_under_the_last_node_it_covers(tmp_path):
    random = np.random.default_rng(3)
    conv = numpy_helper.from_array(random.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.2, "w")
    bias = numpy_helper.from_array(random.standard_normal(8).astype(np.float32) * 0.1, "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["y"], name="pool")]
    graph = helper.make_graph(nodes, "fused", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])], [conv, bias])
    path = tmp_path / "fused.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)
    report = compare.compare(path)
    relu = report.row_of("r")
    assert relu.node == "relu" and relu.op == "Relu"
    assert relu.estuary_node == "conv" and "Fused" in relu.estuary_op, relu
    assert report.row_of("c") is None  # the Conv's own result is never computed apart
    assert report.clean, report.table()


def test_errors_name_what_is_wrong(planted, tmp_path):
    result = run_cli(planted, "--input", f"nope={tmp_path / 'missing.npy'}")
    assert result.returncode == 2 and "missing.npy" in result.stderr
    np.save(tmp_path / "x.npy", np.zeros((4, 16), np.float32))
    result = run_cli(planted, "--input", f"nope={tmp_path / 'x.npy'}")
    assert result.returncode == 2 and "input 'nope' is not an input of the model" in result.stderr
    with pytest.raises(ValueError, match="takes an .onnx file"):
        compare.compare(str(tmp_path / "model.est"), reference="onnxruntime")
    symbolic = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "symbolic",
                                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    onnx.save(helper.make_model(symbolic, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), tmp_path / "symbolic.onnx")
    with pytest.raises(ValueError, match=r"input 'x' has symbolic dims \(N\).*input_shapes"):
        compare.compare(str(tmp_path / "symbolic.onnx"))
    report = compare.compare(str(tmp_path / "symbolic.onnx"), input_shapes={"x": [3, 4]})
    assert report.clean and report.row_of("y").shape == [3, 4]


@pytest.fixture(scope="module")
def exported():
    return environments.made("torch", EXAMPLES / "models.py", "resnet50", "llama_block",
                             key_files=[EXAMPLES / "model_inputs.py"])


def test_resnet50_is_clean_against_onnxruntime_and_bf16_drifts_within_its_thresholds(exported):
    path, shapes = str(exported / "resnet50.onnx"), {"x": [1, 3, 224, 224]}
    f32 = compare.compare(path, reference="onnxruntime", input_shapes=shapes)
    assert f32.clean, f32.table()
    assert len(f32.compared) >= 50  # a result per convolution (each fused with its bias, residual and Relu), pools, head
    bf16 = compare.compare(path, reference="onnxruntime", input_shapes=shapes, precision_mode="bf16",
                           allow_slow_precision=True)  # the same figures on a CPU without AVX512-BF16
    assert bf16.clean, bf16.table()
    assert min(row.figures["cosine"] for row in bf16.compared) < min(row.figures["cosine"] for row in f32.compared)


def test_llama_block_is_clean_against_the_f64_reference(exported):
    sys.path.insert(0, str(EXAMPLES))
    import model_inputs
    report = compare.compare(str(exported / "llama_block.onnx"), model_inputs.example_inputs("llama_block"),
                             reference="estuary-f64")
    assert report.clean, report.table()
    assert len(report.compared) >= 10
