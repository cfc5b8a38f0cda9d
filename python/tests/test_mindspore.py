"""The MindSpore frontend on models MindSpore exports to MindIR (mindspore_models.py, run in
MindSpore's environment and cached): CNNs, nn.TransformerEncoder, a LLaMA-style block, a
construct with a data-dependent if and while, and a model in the split form of large
models, each converted by Estuary once and compared with MindSpore's own run of the file.
This test runs without MindSpore; the bad-input cases damage copies of the files."""
import os
import shutil
import stat
import subprocess

import numpy as np
import pytest

import environments
import estuary

SCRIPT = environments.ROOT / "python" / "tests" / "mindspore_models.py"
MODELS = ["resnet50", "mobilenet_v2", "encoder", "decoder", "control_flow", "shapes", "split",
          "layer_norm_statistics"]


@pytest.fixture(scope="module")
def saved():
    return environments.made("mindspore", SCRIPT, *MODELS, "unsupported")


def model_file(saved, name):
    return saved / (f"{name}_graph.mindir" if name == "split" else f"{name}.mindir")


def assert_close(actual, expected):
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * max(scale, 1e-3))


@pytest.mark.parametrize("name", MODELS)
def test_model_matches_mindspore(saved, name):
    model = estuary.Model(str(model_file(saved, name)))
    with np.load(saved / f"{name}.npz") as arrays:
        batches = sorted(key[3:] for key in arrays.files if key.startswith("x_b"))
        if name != "encoder":  # exported for one batch size (mindspore_models.py)
            assert isinstance(model.inputs[0]["shape"][0], str), "the batch stays symbolic"
        for batch in batches:
            (y,) = model.run([arrays[f"x_b{batch}"]])
            assert_close(y, arrays[f"y_b{batch}"])


def test_side_effects_and_tuples_leave_no_trace(saved):
    # Load/UpdateState/Depend and MakeTuple/TupleGetItem are looked through: the ResNet's IR
    # holds its convolutions and nothing of MindSpore's plumbing.
    graph = estuary.Graph.import_model(str(model_file(saved, "resnet50")))
    ops = graph.op_counts()
    assert ops.get("Conv") == 53 and ops.get("BatchNormalization") == 53, ops
    assert not {"Load", "UpdateState", "Depend", "MakeTuple", "TupleGetItem"} & set(ops), ops


def test_control_flow_becomes_if_and_loop(saved):
    graph = estuary.Graph.import_model(str(model_file(saved, "control_flow")))
    ops = graph.op_counts()
    assert ops.get("If") == 1 and ops.get("Loop") == 1, ops


def test_add_rms_norm_fuses_in_a_mindspore_decoder(saved):
    # The decoder's RMSNorms are written out (x * rsqrt(mean(x * x) + eps) * w); O2 makes them
    # RMSNormalization and the fusion plugin joins each residual Add with the norm after it.
    graph = estuary.Graph.import_model(str(model_file(saved, "decoder")))
    graph.optimize("O2")
    ops = graph.op_counts()
    assert ops.get("estuary::AddRMSNorm") == 2, ops
    assert ops.get("RMSNormalization") == 1, ops  # the first norm, on the input
    with np.load(saved / "decoder.npz") as arrays:
        assert_close(estuary.Model(graph).run([arrays["x_b3"]])[0], arrays["y_b3"])


def run_cli(*args):
    return subprocess.run([os.environ["ESTUARY_CLI"], *map(str, args)], capture_output=True, text=True)


def test_mode_info_says_what_wrote_the_file(saved):
    info = run_cli("convert", model_file(saved, "resnet50"), "--mode", "info")
    assert info.returncode == 0, info.stderr
    assert "MindIR model from MindSpore 2.10.0" in info.stdout, info.stdout
    assert "inputs: x: f32[x_dim0,3,64,64]" in info.stdout and "Conv2D" in info.stdout
    assert "parameters: 23," in info.stdout and "weights: in the file" in info.stdout
    split = run_cli("convert", model_file(saved, "split"), "--framework", "mindspore", "--mode", "info")
    assert split.returncode == 0, split.stderr
    assert "split form" in split.stdout and "parameters: 3,152" in split.stdout, split.stdout


def test_input_shape_fixes_or_bounds_the_batch(saved, tmp_path):
    with np.load(saved / "decoder.npz") as arrays:
        x1, y1, x3, y3 = (arrays[k] for k in ("x_b1", "y_b1", "x_b3", "y_b3"))
    name = estuary.Model(str(model_file(saved, "decoder"))).inputs[0]["name"]
    fixed = estuary.convert(str(model_file(saved, "decoder")), input_shapes={name: list(x3.shape)})
    assert fixed.inputs[0]["shape"] == list(x3.shape)
    assert_close(fixed.run([x3])[0], y3)
    bounded = run_cli("convert", model_file(saved, "decoder"), "-o", tmp_path / "b.eom", "--input-shape",
                      f"{name}:1~2,16,64")
    assert bounded.returncode == 0, bounded.stderr
    model = estuary.Model(str(tmp_path / "b.eom"))
    assert_close(model.run([x1])[0], y1)
    with pytest.raises(estuary.EstuaryError, match="dim0"):
        model.run([x3])


def writable_copy(source, target):
    """A copy of an exported file or folder (MindSpore writes them read-only, mode 0400)."""
    if source.is_dir():
        shutil.copytree(source, target)
        for path in [target, *target.iterdir()]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    else:
        shutil.copyfile(source, target)
        target.chmod(0o600)
    return target


def convert_fails(path, *options):
    result = run_cli("convert", path, "-o", os.devnull, *options)
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stderr


def split_copy(saved, directory):
    directory.mkdir()
    graph = writable_copy(model_file(saved, "split"), directory / "split_graph.mindir")
    writable_copy(saved / "split_variables", directory / "split_variables")
    return graph


def test_bad_input_is_named(saved, tmp_path):
    # A truncated file: protobuf's reader names the message and the byte.
    cut = writable_copy(model_file(saved, "encoder"), tmp_path / "cut.mindir")
    cut.write_bytes(cut.read_bytes()[:5000])
    assert f"{cut}: " in convert_fails(cut) and "truncated" in convert_fails(cut)
    # A node whose REF:: names no primitive (the name changed in place, same length).
    data = model_file(saved, "encoder").read_bytes()
    assert b"REF::Softmax" in data
    dangling = tmp_path / "dangling.mindir"
    dangling.write_bytes(data.replace(b"REF::Softmax", b"REF::Softmix"))
    message = convert_fails(dangling)
    assert "refers to 'Softmix" in message and "which is no primitive, graph or node of the model" in message
    # An encrypted file.
    encrypted = tmp_path / "encrypted.mindir"
    encrypted.write_bytes(bytes.fromhex("d85e3a7f") + os.urandom(256))
    assert "the MindIR is encrypted (AES-GCM)" in convert_fails(encrypted)
    # A parameter in the file with four bytes too few, or with no data at all.
    message = convert_fails(saved / "wrong_size.mindir")
    assert "parameter 'first.weight'" in message and "bytes" in message, message
    assert "parameter 'first.weight' has no data (neither raw_data nor external_data)" in convert_fails(saved / "no_data.mindir")
    # A split model whose data file is missing, shorter than the graph says, or another's.
    missing = split_copy(saved, tmp_path / "missing")
    (missing.parent / "split_variables" / "data_0").unlink()
    assert "data_0" in convert_fails(missing)
    short = split_copy(saved, tmp_path / "short")
    data_file = short.parent / "split_variables" / "data_0"
    data_file.write_bytes(data_file.read_bytes()[:-100])
    message = convert_fails(short)
    assert "outside the file's" in message and "the folder does not match the graph" in message and "parameter '" in message
    foreign = split_copy(saved, tmp_path / "foreign")
    (foreign.parent / "split_variables" / "data_0").write_bytes(b"\0" * 64 + os.urandom(4096))
    assert "not a MindIR data file written little-endian" in convert_fails(foreign)
    # A data file that is a symbolic link out of the model's folder: refused, unless the user
    # allows the folder it leads to.
    linked = split_copy(saved, tmp_path / "linked")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (linked.parent / "split_variables" / "data_0").rename(outside / "data_0")
    (linked.parent / "split_variables" / "data_0").symlink_to(outside / "data_0")
    message = convert_fails(linked)
    assert f"which resolves to '{(outside / 'data_0').resolve()}', outside the model's directory" in message, message
    allowed = run_cli("convert", linked, "-o", os.devnull, "--allow-dir", outside)
    assert allowed.returncode == 0, allowed.stderr
    # Ops without a translation, all at once, with their nodes.
    unsupported = convert_fails(saved / "unsupported.mindir")
    assert "2 ops have no translation" in unsupported
    assert "Erfinv" in unsupported and "Lgamma" in unsupported
