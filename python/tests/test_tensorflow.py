"""The TensorFlow frontend on models TensorFlow 2.21 saves (tensorflow_models.py, run in
TensorFlow's environment and cached): each converted by Estuary from its SavedModel and
from its frozen GraphDef, once, and run at two batch sizes against TensorFlow's outputs.
This test runs without TensorFlow; the bad-input cases corrupt copies of the files."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import environments
import estuary

MODELS = ["mlp", "resnet50", "mobilenet_v2", "efficientnet_b0", "encoder", "decoder", "recurrent", "control_flow",
          "semantics"]
# Frozen with lower_control_flow=False too: their While and If stay functional.
WITH_CONTROL_FLOW = ["recurrent", "control_flow"]
CASES = ([(name, "saved_model") for name in MODELS] + [(name, "frozen") for name in MODELS + ["tf1_graph"]] +
         [(name, "functional") for name in WITH_CONTROL_FLOW])
RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(scope="module")
def saved():
    script = environments.ROOT / "python" / "tests" / "tensorflow_models.py"
    return environments.made("tensorflow", script, *MODELS, "tf1_graph", "bad_graphs")


def path_of(saved, name, form):
    return {"saved_model": saved / name, "frozen": saved / f"{name}.pb",
            "functional": saved / f"{name}_functional.pb"}[form]


def assert_close(actual, expected):
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL * scale)


@pytest.mark.parametrize("name,form", CASES)
def test_model_matches_tensorflow(saved, name, form):
    model = estuary.Model(str(path_of(saved, name, form)))
    assert isinstance(model.inputs[0]["shape"][0], str), "the batch stays symbolic"
    with np.load(saved / f"{name}.npz") as arrays:
        for batch in (1, 3):
            (y,) = model.run([arrays[f"x_b{batch}"]])
            assert_close(y, arrays[f"y_b{batch}"])


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2", "efficientnet_b0"])
def test_built_cnn_keeps_no_transposes_around_convolutions(saved, name):
    # TensorFlow's NHWC convolutions arrive wrapped in Transposes to NCHW and back; the
    # pipeline sinks them until they cancel, leaving the one at the input, and the batch
    # norms (Mul/Add by constants in Keras 3) fold into the convolutions.
    model = estuary.Model(str(saved / name))
    with np.load(saved / f"{name}.npz") as arrays:
        model.run([arrays["x_b1"]])
    built = model.report()["ops_after"]
    convolutions = built.get("Conv", 0) + built.get("estuary::FusedConv", 0)
    assert convolutions > 40
    assert built.get("Transpose", 0) == 1, built
    assert built.get("BatchNormalization", 0) == 0 and built.get("Sub", 0) <= 1, built


def test_add_rms_norm_fuses_in_a_tensorflow_decoder(saved):
    # The decoder's RMSNorms are written out in TF ops; O2 recognizes them and the shipped
    # fusion plugin fuses each residual Add into the RMSNorm after it, as for ONNX
    # RMSNormalization and PyTorch's rms_norm.
    graph = estuary.Graph.import_model(str(saved / "decoder"))
    graph.optimize("O2")
    ops = graph.op_counts()
    assert ops.get("estuary::AddRMSNorm") == 4, ops
    assert ops.get("RMSNormalization") == 1, ops  # the first, on the input: no Add before it
    assert "Sqrt" not in ops and "Reciprocal" not in ops, ops
    unfused = estuary.Graph.import_model(str(saved / "decoder"))
    unfused.optimize("O2", disable=["fuse_add_rms_norm", "recognize_rms_norm"])
    assert "estuary::AddRMSNorm" not in unfused.op_counts()
    model = estuary.Model(graph)
    with np.load(saved / "decoder.npz") as arrays:
        for batch in (1, 3):
            assert_close(model.run([arrays[f"x_b{batch}"]])[0], arrays[f"y_b{batch}"])


@pytest.mark.parametrize("name", ["tf1_graph", "control_flow", "recurrent"])
def test_tf1_control_flow_becomes_if_and_loop(saved, name):
    # The frozen graphs hold TF 1's Switch/Merge/Enter/Exit/NextIteration/LoopCond (the
    # models' script checks that it wrote them); the IR holds If and Loop instead.
    ops = estuary.Graph.import_model(str(saved / f"{name}.pb")).op_counts()
    assert ops.get("Loop", 0) >= 1
    assert name == "recurrent" or ops.get("If", 0) >= 1
    assert not {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"} & set(ops)


def test_saved_model_written_by_tf_saved_model_save(saved):
    # Its restore function assigns another set of variables than serving reads: the
    # checkpoint keys come from the object graphs.
    model = estuary.Model(str(saved / "mlp_saved"))
    with np.load(saved / "mlp.npz") as arrays:
        assert_close(model.run([arrays["x_b3"]])[0], arrays["y_b3"])


def test_saved_model_names_come_from_the_signature(saved):
    model = estuary.Model(str(saved / "mlp"))
    assert [i["name"] for i in model.inputs] == ["features"]
    assert [o["name"] for o in model.outputs] == ["output_0"]
    with pytest.raises(estuary.EstuaryError, match="has no signature 'predict'; its signatures: serve, serving_default"):
        estuary.Model(str(saved / "mlp"), signature="predict")
    graph = estuary.Graph.import_model(str(saved / "mlp"), signature="serve")
    assert graph.num_nodes > 0


def test_mode_info_lists_signatures_ops_and_parameters(saved):
    result = subprocess.run([os.environ["ESTUARY_CLI"], "convert", str(saved / "mlp"), "--mode", "info"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "TensorFlow SavedModel model from TensorFlow 2.21" in text
    assert "variant serving_default:" in text and "variant serve:" in text
    assert "inputs: features: f32[?,16]" in text
    assert "parameters: 676 (" in text  # 16*32 + 32 + 32*4 + 4
    assert "MatMul" in text
    frozen = subprocess.run([os.environ["ESTUARY_CLI"], "convert", str(saved / "mlp.pb"), "--framework", "3",
                             "--mode", "info"], capture_output=True, text=True)
    assert frozen.returncode == 0, frozen.stderr
    assert "TensorFlow GraphDef model" in frozen.stdout and "parameters: 676 (" in frozen.stdout


def test_input_shape_fixes_or_bounds_the_signature_dims(saved, tmp_path):
    # The recurrent model's signature leaves batch and time unknown: symbolic dims, which
    # --input-shape fixes (a plan made at conversion) or bounds (checked at run time).
    with np.load(saved / "recurrent.npz") as arrays:
        x1, y1, x3, y3 = (arrays[k] for k in ("x_b1", "y_b1", "x_b3", "y_b3"))
    fixed = estuary.convert(str(saved / "recurrent"), input_shapes={"sequence": list(x3.shape)})
    assert fixed.inputs[0]["shape"] == list(x3.shape)
    assert_close(fixed.run([x3])[0], y3)
    result = subprocess.run([os.environ["ESTUARY_CLI"], "convert", str(saved / "recurrent"), "-o",
                             str(tmp_path / "bounded.eom"), "--input-shape", "sequence:1~2,-1,8"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "dim sequence_dim0: 1~2" in result.stdout
    bounded = estuary.Model(str(tmp_path / "bounded.eom"))
    assert_close(bounded.run([x1])[0], y1)
    with pytest.raises(estuary.EstuaryError, match="sequence_dim0"):
        bounded.run([x3])


def copy_of(saved, name, tmp_path):
    target = tmp_path / name
    shutil.copytree(saved / name, target)
    return target


def test_bad_input_is_named(saved, tmp_path):
    # A truncated GraphDef.
    cut = tmp_path / "cut.pb"
    cut.write_bytes((saved / "mlp.pb").read_bytes()[:200])
    with pytest.raises(estuary.EstuaryError, match=r"cut\.pb: .* at byte \d+: .*truncated"):
        estuary.Model(str(cut))
    # A SavedModel without its variables.
    no_variables = copy_of(saved, "mlp", tmp_path)
    shutil.rmtree(no_variables / "variables")
    with pytest.raises(estuary.EstuaryError, match="the SavedModel has no .*variables.index"):
        estuary.Model(str(no_variables))
    # A shard whose first variable's bytes no longer match their checksum (TensorFlow
    # writes the variables first, the object graph last).
    corrupt = copy_of(saved, "mlp", tmp_path / "corrupt")
    shard = next((corrupt / "variables").glob("variables.data-*"))
    data = bytearray(shard.read_bytes())
    data[0] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(estuary.EstuaryError, match=r"variables\.data-00000-of-00001: the bytes of variable "
                                                   r"'variables/0/\.ATTRIBUTES/VARIABLE_VALUE' do not match their "
                                                   r"checksum"):
        estuary.Model(str(corrupt))
    # A variables shard that is a symbolic link out of the SavedModel's folder: refused.
    linked = copy_of(saved, "mlp", tmp_path / "linked")
    shard = next((linked / "variables").glob("variables.data-*"))
    outside = tmp_path / "linked" / "elsewhere.data"
    shard.rename(outside)
    shard.symlink_to(outside)
    with pytest.raises(estuary.EstuaryError, match=f"which resolves to '{outside.resolve()}', outside the model's "
                                                   "directory"):
        estuary.Model(str(linked))
    # An index whose block fails its checksum.
    index = copy_of(saved, "mlp", tmp_path / "index") / "variables" / "variables.index"
    data = bytearray(index.read_bytes())
    data[5] ^= 0xFF
    index.write_bytes(bytes(data))
    with pytest.raises(estuary.EstuaryError, match=r"variables\.index: at byte \d+: a block's checksum"):
        estuary.Model(str(index.parent.parent))


def convert_fails(path, *options):
    result = subprocess.run([os.environ["ESTUARY_CLI"], "convert", str(path), "--output", os.devnull, *options],
                            capture_output=True, text=True)
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stderr


def test_broken_graphs_are_named(saved):
    assert "every node of the graph feeds another, so none is its output (a cycle?)" in convert_fails(
        saved / "cycle.pb")
    assert "has a cycle: 2 nodes cannot be put in an order where every input is defined before its use, among " \
           "them node 'added' (AddV2), node 'doubled' (Mul)" in convert_fails(saved / "cycle.pb", "--out-nodes",
                                                                              "doubled")
    assert "a node reads 'nowhere', which no node of the graph is (a dangling input)" in convert_fails(
        saved / "dangling.pb")
    # Every op without a translation at once, with its nodes.
    unsupported = convert_fails(saved / "unsupported.pb")
    assert "2 ops have no translation (2 nodes):" in unsupported
    assert "Digamma: 'digamma'" in unsupported and "Lgamma: 'lgamma'" in unsupported
    assert "node 'loop/Merge_1' (Merge) merges a value entering the while loop 'loop/while_context' with " \
           "'loop/mul:0', which no NextIteration makes" in convert_fails(saved / "broken_loop.pb")
