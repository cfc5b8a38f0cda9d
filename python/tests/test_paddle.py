"""The Paddle frontend on models Paddle saves with paddle.jit.save (paddle_models.py, run in
Paddle's environments and cached): PIR programs from Paddle 3.3, legacy ProgramDescs from
Paddle 3.3 (OldIrGuard, the CNNs) and from Paddle 2.6 (everything, control flow included),
each converted by Estuary once and run at two batch sizes against Paddle Inference's
outputs. This test runs without Paddle; the bad-input cases damage copies of the files."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import environments
import estuary

SCRIPT = environments.ROOT / "python" / "tests" / "paddle_models.py"
CNNS = ["resnet50", "mobilenet_v2", "mobilenet_v3_small"]
PIR_MODELS = CNNS + ["encoder", "decoder", "control_flow"]
LEGACY_2 = ["encoder", "decoder", "control_flow"]
CASES = ([("pir", name) for name in PIR_MODELS] + [("legacy3", name) for name in CNNS] +
         [("legacy2", name) for name in LEGACY_2])


@pytest.fixture(scope="module")
def saved():
    return {
        "pir": environments.made("paddle", SCRIPT, "pir", *PIR_MODELS, "unsupported"),
        "legacy3": environments.made("paddle", SCRIPT, "legacy", *CNNS),
        "legacy2": environments.made("paddle2", SCRIPT, "legacy", *LEGACY_2),
    }


def program(saved, form, name):
    directory = saved[form] / name
    json_program = directory / "inference.json"
    return json_program if json_program.exists() else directory / "inference.pdmodel"


def assert_close(actual, expected):
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * max(scale, 1e-3))


@pytest.mark.parametrize("form,name", CASES)
def test_model_matches_paddle_inference(saved, form, name):
    model = estuary.Model(str(program(saved, form, name)))
    assert isinstance(model.inputs[0]["shape"][0], str), "the batch stays symbolic"
    with np.load(saved[form] / f"{name}.npz") as arrays:
        for batch in (1, 3):
            (y,) = model.run([arrays[f"x_b{batch}"]])
            assert_close(y, arrays[f"y_b{batch}"])


@pytest.mark.parametrize("form", ["pir", "legacy2"])
def test_add_rms_norm_fuses_in_a_paddle_decoder(saved, form):
    # The decoder's RMSNorms are written out (x * rsqrt(mean(x * x) + eps) * w); O2 makes them
    # RMSNormalization and the fusion plugin joins each residual Add with the norm after it.
    graph = estuary.Graph.import_model(str(program(saved, form, "decoder")))
    graph.optimize("O2")
    ops = graph.op_counts()
    assert ops.get("estuary::AddRMSNorm") == 2, ops
    assert ops.get("RMSNormalization") == 1, ops  # the first norm, on the input
    with np.load(saved[form] / "decoder.npz") as arrays:
        assert_close(estuary.Model(graph).run([arrays["x_b3"]])[0], arrays["y_b3"])


def run_cli(*args):
    return subprocess.run([os.environ["ESTUARY_CLI"], *map(str, args)], capture_output=True, text=True)


def test_mode_info_says_the_program_form(saved):
    pir = run_cli("convert", program(saved, "pir", "resnet50"), "--mode", "info")
    assert pir.returncode == 0, pir.stderr
    assert "Paddle PIR program" in pir.stdout and "inputs: x: f32[x_dim0,3,64,64]" in pir.stdout
    assert "parameters: 23," in pir.stdout and "pd_op::conv2d" in pir.stdout
    legacy = run_cli("convert", program(saved, "legacy2", "control_flow"), "--framework", "paddle", "--mode", "info")
    assert legacy.returncode == 0, legacy.stderr
    assert "Paddle ProgramDesc (legacy) program" in legacy.stdout
    assert "while" in legacy.stdout and "select_input" in legacy.stdout


def test_input_shape_fixes_or_bounds_the_batch(saved, tmp_path):
    with np.load(saved["pir"] / "encoder.npz") as arrays:
        x1, y1, x3, y3 = (arrays[k] for k in ("x_b1", "y_b1", "x_b3", "y_b3"))
    fixed = estuary.convert(str(program(saved, "pir", "encoder")), input_shapes={"x": list(x3.shape)})
    assert fixed.inputs[0]["shape"] == list(x3.shape)
    assert_close(fixed.run([x3])[0], y3)
    bounded = run_cli("convert", program(saved, "pir", "encoder"), "-o", tmp_path / "b.eom", "--input-shape",
                      "x:1~2,16,64")
    assert bounded.returncode == 0, bounded.stderr
    model = estuary.Model(str(tmp_path / "b.eom"))
    assert_close(model.run([x1])[0], y1)
    with pytest.raises(estuary.EstuaryError, match="x_dim0"):
        model.run([x3])


def copy_model(saved, form, name, target):
    shutil.copytree(saved[form] / name, target)
    return program({form: target.parent}, form, target.name)


def convert_fails(path, *options):
    result = run_cli("convert", path, "-o", os.devnull, *options)
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stderr


def test_bad_input_is_named(saved, tmp_path):
    # A truncated PIR program: the JSON's line and column.
    cut = copy_model(saved, "pir", "encoder", tmp_path / "cut")
    cut.write_bytes(cut.read_bytes()[:5000])
    assert f"{cut}: line 1, column 5001: the text ends inside" in convert_fails(cut)
    # A truncated legacy program.
    cut_legacy = copy_model(saved, "legacy2", "encoder", tmp_path / "cut_legacy")
    cut_legacy.write_bytes(cut_legacy.read_bytes()[:3000])
    assert f"{cut_legacy}: " in convert_fails(cut_legacy) and "truncated" in convert_fails(cut_legacy)
    # Parameters shorter and longer than the program needs.
    short = copy_model(saved, "pir", "mobilenet_v2", tmp_path / "short")
    params = short.with_suffix(".pdiparams")
    params.write_bytes(params.read_bytes()[:-100])
    assert "it is shorter than the program's parameters need" in convert_fails(short)
    long = copy_model(saved, "pir", "mobilenet_v2", tmp_path / "long")
    params = long.with_suffix(".pdiparams")
    params.write_bytes(params.read_bytes() + b"\0" * 64)
    assert "64 bytes follow the last of the program's" in convert_fails(long)
    # Another model's parameters: the first disagreeing tensor is named with both shapes.
    swapped = copy_model(saved, "pir", "resnet50", tmp_path / "swapped")
    shutil.copy(saved["pir"] / "mobilenet_v2" / "inference.pdiparams", swapped.with_suffix(".pdiparams"))
    message = convert_fails(swapped)
    assert "in the file, but the program declares" in message and "parameter '" in message
    # No parameter file.
    missing = copy_model(saved, "pir", "resnet50", tmp_path / "missing")
    missing.with_suffix(".pdiparams").unlink()
    assert "but no " in convert_fails(missing) and "(name it with --weights)" in convert_fails(missing)
    # Parameters beside the program that are a symbolic link out of its folder: refused. Named
    # by the user (--weights), a file elsewhere is read.
    linked = copy_model(saved, "pir", "mobilenet_v2", tmp_path / "linked" / "model")
    outside = tmp_path / "linked" / "elsewhere.pdiparams"
    linked.with_suffix(".pdiparams").rename(outside)
    linked.with_suffix(".pdiparams").symlink_to(outside)
    assert f"which resolves to '{outside.resolve()}', outside the model's directory" in convert_fails(linked)
    assert run_cli("convert", linked, "-o", os.devnull, "--weights", outside).returncode == 0
    # Ops without a translation, all at once, with their nodes.
    unsupported = convert_fails(program(saved, "pir", "unsupported"))
    assert "2 ops have no translation" in unsupported
    assert "pd_op::erfinv" in unsupported and "pd_op::lgamma" in unsupported
