"""`estuary compare` against the framework itself, run in its own environment's Python by the
compare package's runners: TensorFlow on a small Keras CNN (seeded random weights) saved as a
SavedModel and as a frozen GraphDef, Paddle on a small CNN saved as a PIR program and as a
legacy one, MindSpore on a small CNN exported to MindIR, whole and in the split form. Each is
clean in f32, the report's nodes are the framework's, and a planted fault
(tests/plugins/biased_tanh.cpp: the CPU's Tanh adds 0.05) is reported at the model's Tanh
node. This test runs without any of the frameworks; the models are made in the frameworks'
environments (environments.made) and cached."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import environments
import estuary
import estuary.compare as compare

PLUGIN = os.path.join(os.environ["ESTUARY_TEST_PLUGIN_DIR"], "libestuary_test_biased_tanh.so")
SHAPES = {"image": [2, 16, 16, 3]}

# Run in TensorFlow's environment: OUT_DIR/cnn (SavedModel, Keras' export) and OUT_DIR/cnn.pb
# (its serving function frozen). The planted Tanh reads a Mul of two computed values, so no
# fusion takes it into another node, and a 2-D one: the CPU runs it plain, with the plugin's
# kernel (the convolutions' activations run in a blocked layout, with kernels of their own).
MODELS_SCRIPT = '''
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

tf.keras.utils.set_random_seed(0)
layers = tf.keras.layers
image = tf.keras.Input((16, 16, 3), name="image")
hidden = layers.Conv2D(8, 3, padding="same", activation="relu", name="stem")(image)
hidden = layers.MaxPooling2D(name="pool")(hidden)
hidden = layers.Conv2D(8, 3, padding="same", name="mixer")(hidden)
hidden = hidden * layers.Activation("sigmoid", name="gate")(hidden)
hidden = layers.Conv2D(16, 3, padding="same", activation="relu", name="head")(hidden)
hidden = layers.GlobalAveragePooling2D(name="average")(hidden)
hidden = layers.Dense(12, name="fc")(hidden)
hidden = layers.Activation("tanh", name="planted")(hidden * layers.Activation("sigmoid", name="fc_gate")(hidden))
model = tf.keras.Model(image, layers.Dense(5, name="logits")(hidden), name="cnn")
out = sys.argv[1]
model.export(os.path.join(out, "cnn"), verbose=False)
function = tf.function(model).get_concrete_function(tf.TensorSpec((None, 16, 16, 3), tf.float32, name="image"))
frozen = convert_variables_to_constants_v2(function).graph.as_graph_def()
tf.io.write_graph(frozen, out, "cnn.pb", as_text=False)
'''


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    script = tmp_path_factory.mktemp("script") / "compare_framework_models.py"
    script.write_text(MODELS_SCRIPT)
    return environments.made("tensorflow", script)


def run_cli(*args):
    """`estuary compare` in a process of its own (a loaded plugin stays for the process's life)."""
    environment = dict(os.environ, ESTUARY_PYTHON=sys.executable)
    return subprocess.run([os.environ["ESTUARY_CLI"], "compare", *map(str, args)], capture_output=True, text=True,
                          env=environment, timeout=600)


def assert_drifts_first_and_alone(report):
    """The JSON report's first node past the thresholds: no node before it is, and its inputs are
    within them (the node itself drifts)."""
    rows, first = report["nodes"], report["first_past_threshold"]
    at = next(i for i, row in enumerate(rows) if row["value"] == first["value"])
    assert all(row["past_threshold"] is None for row in rows[:at])
    assert "the node itself drifts" in report["summary"]


def assert_names_are_tensorflows(report):
    for row in report.compared:
        if ":" in row.value:  # an intermediate value, "node:index", computed by that TensorFlow node
            assert row.node == row.value.rsplit(":", 1)[0], row
        assert row.op in {"Conv2D", "BiasAdd", "Relu", "MaxPool", "Sigmoid", "Mul", "Tanh", "Mean", "MatMul"}, row


@pytest.mark.parametrize("form", ["saved_model", "frozen"])
def test_tensorflow_model_is_clean_against_tensorflow(saved, form):
    path = saved / "cnn" if form == "saved_model" else saved / "cnn.pb"
    # The frozen graph's values go back a value at a time: the batches' protocol, at its finest.
    budget = {"memory_budget": 1} if form == "frozen" else {}
    report = compare.compare(path, reference="framework", input_shapes=SHAPES, **budget)
    assert report.reference == "tensorflow"
    assert report.clean, report.table(0)
    # stem's Relu, mixer's BiasAdd, gate, its Mul, head's Relu, the Mean, fc's BiasAdd, fc_gate,
    # its Mul, planted and the logits; the rest are reorders and Transposes the pipeline made.
    assert len(report.compared) >= 11, report.table(0)
    assert_names_are_tensorflows(report)
    prefix = "StatefulPartitionedCall_1/StatefulPartitionedCall/" if form == "saved_model" else ""
    planted = next(row for row in report.compared if row.op == "Tanh")
    assert planted.node == prefix + "cnn_1/planted_1/Tanh", planted
    # sink_transposes computes the NHWC gate in NCHW, under the same name: measured in TF's order.
    gate = next(row for row in report.compared if row.node == prefix + "cnn_1/gate_1/Sigmoid")
    assert gate.shape == [2, 8, 8, 8] and gate.figures["axes"] == [0, 2, 3, 1], gate
    logits = report.row_of(report.outputs[0])
    # The output's value is named by the signature's key or the frozen graph's Identity; its node
    # is the one that computed it.
    assert logits.node == prefix + "cnn_1/logits_1/BiasAdd" and logits.figures["max_rel"] < 1e-5, logits


# The TensorFlow runner with a fetch that fails for the planted Tanh's tensor: a stand-in for a
# value TensorFlow has but cannot hand over.
REFUSING_RUNNER = '''
import sys
sys.path.insert(0, {compare_dir!r})
import _framework_runner
from _tensorflow_runner import TensorFlowModel


class RefusingModel(TensorFlowModel):
    def fetch(self, tensors):
        if any("planted" in tensor for tensor in tensors):
            raise RuntimeError("TensorFlow cannot hand this tensor over\\nits second line")
        return super().fetch(tensors)


_framework_runner.serve(RefusingModel)
'''


def test_a_value_the_framework_cannot_hand_over_is_reported_with_why(saved, tmp_path, monkeypatch):
    runner = tmp_path / "refusing_runner.py"
    runner.write_text(REFUSING_RUNNER.format(compare_dir=os.path.dirname(compare.__file__)))
    monkeypatch.setitem(compare.references.FRAMEWORKS, "tensorflow", ("tensorflow", str(runner)))
    report = compare.compare(saved / "cnn.pb", reference="framework", input_shapes=SHAPES)
    # Only that value goes uncompared: the batch that held it is fetched again value by value.
    assert report.clean and len(report.compared) >= 10, report.table(0)
    refused = report.unavailable
    assert [(row.node, row.op) for row in refused] == [("cnn_1/planted_1/Tanh", "Tanh")], refused
    assert refused[0].unavailable == "RuntimeError: TensorFlow cannot hand this tensor over"
    assert (f"(1 that tensorflow has but could not hand over: the first, '{refused[0].value}', for RuntimeError: "
            f"TensorFlow cannot hand this tensor over; the others have no counterpart there") in report.summary()
    row = next(row for row in report.as_dict()["nodes"] if row["value"] == refused[0].value)
    assert row["unavailable"] == refused[0].unavailable and row["cosine"] is None
    report.to_csv(tmp_path / "report.csv")
    assert "TensorFlow cannot hand this tensor over" in (tmp_path / "report.csv").read_text()


def test_auto_takes_tensorflow_where_it_is_found(saved):
    report = compare.compare(saved / "cnn.pb", input_shapes=SHAPES)
    assert report.reference == "tensorflow" and report.clean


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is not None, reason="this Python has TensorFlow")
def test_without_tensorflow_auto_falls_back_and_framework_says_why(saved, monkeypatch, tmp_path):
    monkeypatch.setenv("ESTUARY_PYTHON_ENVS", str(tmp_path))  # no environment there
    report = compare.compare(saved / "cnn.pb", input_shapes=SHAPES)
    assert report.reference == "estuary-f64" and report.clean
    with pytest.raises(estuary.EstuaryError, match=r"no Python with tensorflow found to run the reference: .* does not exist, and this "
                                                   r"Python .* cannot import tensorflow. Name one with "
                                                   r"framework_python= \(--framework-python PATH\)"):
        compare.compare(saved / "cnn.pb", reference="framework", input_shapes=SHAPES)
    # Named, a Python without TensorFlow runs the runner, whose own error comes back, said as such.
    with pytest.raises(estuary.EstuaryError, match=r"tensorflow \(run by .*\) failed:\n(.|\n)*"
                                                   r"No module named 'tensorflow'"):
        compare.compare(saved / "cnn.pb", reference="framework", input_shapes=SHAPES, framework_python=sys.executable)


def test_errors_name_what_is_wrong(saved, tmp_path):
    missing = tmp_path / "no" / "python"
    with pytest.raises(estuary.EstuaryError, match=f"framework_python '{missing}' does not exist"):
        compare.compare(saved / "cnn.pb", reference="framework", input_shapes=SHAPES, framework_python=str(missing))
    result = run_cli(saved / "cnn.pb", "--input-shape", "image:2,16,16,3", "--framework-python", missing)
    assert result.returncode == 2 and f"framework_python '{missing}' does not exist" in result.stderr
    with pytest.raises(ValueError, match="reference 'framework' takes a TensorFlow"):
        compare.compare(str(tmp_path / "model.onnx"), reference="framework")


def test_planted_fault_is_reported_at_the_tensorflow_node(saved, tmp_path):
    report_path = tmp_path / "report.json"
    result = run_cli(saved / "cnn", "--plugin", PLUGIN, "--reference", "framework", "--input-shape",
                     "image:2,16,16,3", "--json", report_path)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    assert report["reference"] == "tensorflow"
    first = report["first_past_threshold"]
    assert (first["node"], first["op"]) == ("StatefulPartitionedCall_1/StatefulPartitionedCall/cnn_1/planted_1/Tanh",
                                            "Tanh"), first
    assert [entry["op"] for entry in first["inputs"]] == ["Mul"] and first["inputs"][0]["past_threshold"] is None
    assert first["max_abs"] == pytest.approx(0.05, rel=1e-3)
    assert_drifts_first_and_alone(report)
    assert np.isfinite(first["cosine"])


# Run in a Paddle environment: OUT_DIR/inference.json with Paddle 3 (.venvs/paddle), a PIR
# program, or OUT_DIR/inference.pdmodel with Paddle 2.6 (.venvs/paddle2), a legacy one (Paddle
# 3's OldIrGuard no longer builds this model's sigmoid), each with its .pdiparams. The planted
# tanh reads a product of two computed values, as the Keras model's does.
PADDLE_MODELS_SCRIPT = '''
import os, sys
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.static import InputSpec


class Planted(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2D(3, 8, 3, padding=1)
        self.mixer = nn.Conv2D(8, 8, 3, padding=1)
        self.head = nn.Conv2D(8, 16, 3, padding=1)
        self.fc = nn.Linear(16, 12)
        self.logits = nn.Linear(12, 5)

    def forward(self, x):
        hidden = F.max_pool2d(F.relu(self.stem(x)), 2)
        hidden = self.mixer(hidden)
        hidden = hidden * F.sigmoid(hidden)
        hidden = F.relu(self.head(hidden))
        hidden = self.fc(paddle.flatten(F.adaptive_avg_pool2d(hidden, 1), 1))
        return self.logits(paddle.tanh(hidden * F.sigmoid(hidden)))


paddle.seed(0)
model = Planted()
model.eval()
paddle.jit.save(model, os.path.join(sys.argv[1], "inference"), input_spec=[InputSpec([None, 3, 16, 16], "float32", "x")])
'''
PADDLE_SHAPES = {"x": [2, 3, 16, 16]}
PADDLE_PROGRAMS = {"pir": ("paddle", "inference.json"), "legacy": ("paddle2", "inference.pdmodel")}


@pytest.fixture(scope="module")
def paddle_saved(tmp_path_factory):
    """{form: the program's path}."""
    script = tmp_path_factory.mktemp("script") / "compare_paddle_models.py"
    script.write_text(PADDLE_MODELS_SCRIPT)
    return {form: environments.made(environment, script) / file
            for form, (environment, file) in PADDLE_PROGRAMS.items()}


@pytest.mark.parametrize("form", ["pir", "legacy"])
def test_paddle_program_is_clean_against_paddle(paddle_saved, form):
    report = compare.compare(paddle_saved[form], reference="framework", input_shapes=PADDLE_SHAPES)
    assert report.reference == "paddle"
    assert report.clean, report.table(0)
    # stem's conv and relu, the pool, mixer's conv, the gate's sigmoid and product, head's conv
    # and relu, the average, fc, its gate, the planted tanh and the logits, less what fusions took.
    assert len(report.compared) >= 8, report.table(0)
    ops = {row.op for row in report.compared}
    assert {"tanh", "sigmoid", "relu"} <= ops, report.table(0)
    planted = next(row for row in report.compared if row.op == "tanh")
    # The node is named as Estuary's frontend names it: the op's first result, "%ID" in a PIR
    # program, a variable in a legacy one.
    assert planted.node == planted.value and (planted.node.startswith("%") == (form == "pir")), planted
    logits = report.row_of(report.outputs[0])
    assert logits.figures["max_rel"] < 1e-5, logits


def test_auto_takes_paddle_where_it_is_found(paddle_saved):
    report = compare.compare(paddle_saved["pir"], input_shapes=PADDLE_SHAPES)
    assert report.reference == "paddle" and report.clean


@pytest.mark.parametrize("form", ["pir", "legacy"])
def test_planted_fault_is_reported_at_the_paddle_node(paddle_saved, form, tmp_path):
    report_path = tmp_path / "report.json"
    result = run_cli(paddle_saved[form], "--plugin", PLUGIN, "--reference", "framework",
                     "--input-shape", "x:2,3,16,16", "--json", report_path)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    assert report["reference"] == "paddle"
    first = report["first_past_threshold"]
    assert first["op"] == "tanh" and first["node"] == first["value"], first
    assert first["max_abs"] == pytest.approx(0.05, rel=1e-3)
    assert [entry["past_threshold"] for entry in first["inputs"]] == [None], first
    assert_drifts_first_and_alone(report)


# Run in MindSpore's environment: OUT_DIR/cnn.mindir, the same model in the split form large
# models take (OUT_DIR/cnn_split_graph.mindir and its cnn_split_variables folder), and
# OUT_DIR/nodes.json, {value name: op} of the main graph's primitive nodes as MindSpore's own
# mind_ir_pb2 reads them. The planted tanh reads a product of two computed values, as the
# Keras model's does.
MINDSPORE_MODELS_SCRIPT = '''
import json, os, sys
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
import mindspore.train.serialization as serialization
from mindspore import Tensor
from mindspore.train import mind_ir_pb2


class Planted(nn.Cell):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, pad_mode="pad", padding=1, has_bias=True)
        self.pool = nn.MaxPool2d(2, 2)
        self.mixer = nn.Conv2d(8, 8, 3, pad_mode="pad", padding=1, has_bias=True)
        self.head = nn.Conv2d(8, 16, 3, pad_mode="pad", padding=1, has_bias=True)
        self.fc = nn.Dense(16, 12)
        self.logits = nn.Dense(12, 5)

    def construct(self, x):
        hidden = self.pool(ops.relu(self.stem(x)))
        hidden = self.mixer(hidden)
        hidden = hidden * ops.sigmoid(hidden)
        hidden = ops.relu(self.head(hidden))
        hidden = self.fc(hidden.mean((2, 3)))
        return self.logits(ops.tanh(hidden * ops.sigmoid(hidden)))


ms.set_seed(0)
model = Planted()
model.set_train(False)
out = sys.argv[1]
example = Tensor(shape=[None, 3, 16, 16], dtype=ms.float32)
ms.export(model, example, file_name=os.path.join(out, "cnn"), file_format="MINDIR")
saved, serialization.TOTAL_SAVE = serialization.TOTAL_SAVE, 0  # as if the parameters were over 1 GiB
try:
    ms.export(model, example, file_name=os.path.join(out, "cnn_split"), file_format="MINDIR")
finally:
    serialization.TOTAL_SAVE = saved
exported = mind_ir_pb2.ModelProto()
with open(os.path.join(out, "cnn.mindir"), "rb") as file:
    exported.ParseFromString(file.read())
primitives = {primitive.name: primitive.op_type for primitive in exported.primitives}
nodes = {node.output[0]: primitives[node.op_type[len("REF::"):]] for node in exported.graph.node
         if node.op_type.startswith("REF::") and node.op_type[len("REF::"):] in primitives}
with open(os.path.join(out, "nodes.json"), "w") as file:
    json.dump(nodes, file)
'''
MINDSPORE_SHAPES = {"x": [2, 3, 16, 16]}
MINDSPORE_FILES = {"whole": "cnn.mindir", "split": "cnn_split_graph.mindir"}


@pytest.fixture(scope="module")
def mindspore_saved(tmp_path_factory):
    script = tmp_path_factory.mktemp("script") / "compare_mindspore_models.py"
    script.write_text(MINDSPORE_MODELS_SCRIPT)
    return environments.made("mindspore", script)


def mindspore_nodes(mindspore_saved):
    return json.loads((mindspore_saved / "nodes.json").read_text())


@pytest.mark.parametrize("form", ["whole", "split"])
def test_mindir_is_clean_against_mindspore(mindspore_saved, form):
    # The whole file's values go back a value at a time: a copy of the model compiled per value.
    budget = {"memory_budget": 1} if form == "whole" else {}
    report = compare.compare(mindspore_saved / MINDSPORE_FILES[form], reference="framework",
                             input_shapes=MINDSPORE_SHAPES, **budget)
    assert report.reference == "mindspore"
    assert report.clean, report.table(0)
    # stem's relu, the pool, mixer's bias add, the gate's sigmoid and product, head's relu, the
    # mean, fc's bias add, its gate and product, the planted tanh and the logits.
    assert len(report.compared) == 12, report.table(0)
    nodes = mindspore_nodes(mindspore_saved)
    for row in report.compared:  # each a node of MindSpore's graph, with its primitive
        assert nodes.get(row.node) == row.op, row
    logits = report.row_of(report.outputs[0])
    assert logits.op == "BiasAdd" and logits.figures["max_rel"] < 1e-5, logits
    assert not [path for path in mindspore_saved.iterdir() if path.name.startswith(".estuary_compare")]


def test_auto_takes_mindspore_where_it_is_found(mindspore_saved):
    report = compare.compare(mindspore_saved / "cnn.mindir", input_shapes=MINDSPORE_SHAPES)
    assert report.reference == "mindspore" and report.clean


def test_planted_fault_is_reported_at_the_mindspore_node(mindspore_saved, tmp_path):
    report_path = tmp_path / "report.json"
    result = run_cli(mindspore_saved / "cnn.mindir", "--plugin", PLUGIN, "--reference", "framework",
                     "--input-shape", "x:2,3,16,16", "--json", report_path)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    assert report["reference"] == "mindspore"
    first = report["first_past_threshold"]
    (tanh,) = [name for name, op in mindspore_nodes(mindspore_saved).items() if op == "Tanh"]
    assert (first["node"], first["op"], first["value"]) == (tanh, "Tanh", tanh), first
    assert first["max_abs"] == pytest.approx(0.05, rel=1e-3)
    assert [(entry["op"], entry["past_threshold"]) for entry in first["inputs"]] == [("Mul", None)], first
    assert_drifts_first_and_alone(report)
