"""Precision modes (`estuary.convert(precision_mode=...)`, `estuary convert --precision-mode`)
on models built with PyTorch 2.13 (random, seeded weights) and exported to ONNX: torchvision's
ResNet-50, the BERT-like encoder and a LLaMA-style block (examples/models.py). Each mode is
compared with the same model converted in f32.

Stated tolerances (cosine similarity of each output with the f32 output; top-1 agreement
over a batch of 8 images for the classifier): bf16 everywhere >= 0.99, mixed-bf16 >= 0.999;
fp16 everywhere >= 0.999 and mixed-fp16 >= 0.9995 (an f16 mantissa is 3 bits longer than a
bf16 one). fp32 on an f32 model changes nothing, so its outputs are equal.

fp16 has no fast kernels on any CPU this build's oneDNN supports, so the fp16 modes are
refused unless allow_slow_precision is given; the refusal of bf16 on a CPU without
AVX512-BF16 is checked by capping oneDNN's instruction set (ONEDNN_MAX_CPU_ISA=AVX2) in a
child process, which is what such a CPU reports."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import environments
import estuary

EXAMPLES = environments.ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
import model_inputs  # noqa: E402

MODELS = ["resnet50", "bert_encoder", "llama_block"]
# mode -> least cosine similarity with f32
TOLERANCE = {"bf16": 0.99, "mixed-bf16": 0.999, "fp16": 0.999, "mixed-fp16": 0.9995}


@pytest.fixture(scope="module")
def exported():
    return environments.made("torch", EXAMPLES / "models.py", *MODELS, key_files=[EXAMPLES / "model_inputs.py"])


def inputs_of(name):
    return model_inputs.example_inputs(name, batch=8 if name == "resnet50" else 1, seed=3)


def convert(exported, name, mode, **options):
    shapes = {"x": [8, 3, 224, 224]} if name == "resnet50" else None
    # Accuracy is the same on every CPU, so the modes are built even where they would be refused
    # as slow (fp16 everywhere; bf16 on a CPU without AVX512-BF16, such as a Zen 1-3 EPYC); the
    # refusals are tested below.
    return estuary.convert(str(exported / f"{name}.onnx"), input_shapes=shapes, precision_mode=mode,
                           allow_slow_precision=True, **options)


@pytest.fixture(scope="module")
def f32_outputs(exported):
    return {name: convert(exported, name, "origin").run(inputs_of(name)) for name in MODELS}


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def precision_counts(model):
    summary = model.report()["properties"]["precision"]
    found = re.search(r"(\d+) nodes in [\w ]+, (\d+) in f32, (\d+) casts \((\d+) cancelled\), (\d+) weights", summary)
    assert found, summary
    return dict(zip(["low", "f32", "casts", "cancelled", "weights"], map(int, found.groups())))


@pytest.mark.parametrize("mode", list(TOLERANCE))
@pytest.mark.parametrize("name", MODELS)
def test_mode_stays_near_f32(exported, f32_outputs, name, mode):
    model = convert(exported, name, mode)
    outputs = model.run(inputs_of(name))
    for got, want in zip(outputs, f32_outputs[name]):
        assert got.dtype == want.dtype and got.shape == want.shape  # the interface keeps its dtypes
        assert cosine(got, want) >= TOLERANCE[mode], f"{name} {mode}: cosine {cosine(got, want):.6f}"
    if name == "resnet50":
        agree = np.mean(outputs[0].argmax(1) == f32_outputs[name][0].argmax(1))
        assert agree >= 7 / 8, f"top-1 agrees on {agree:.0%} of the batch"
    counts = precision_counts(model)
    assert counts["low"] > 0 and counts["weights"] > 0
    low = "bf16" if "bf16" in mode else "f16"
    dtypes = model.report()["node_dtypes"]
    assert low in dtypes.values()
    if mode.startswith("mixed"):
        assert counts["f32"] > 0 and "f32" in dtypes.values()


def test_fp32_leaves_an_f32_model_as_it_is(exported, f32_outputs):
    model = convert(exported, "llama_block", "fp32")
    for got, want in zip(model.run(inputs_of("llama_block")), f32_outputs["llama_block"]):
        np.testing.assert_array_equal(got, want)
    assert precision_counts(model)["casts"] == 0


def test_atc_spellings_name_the_same_modes(exported):
    ours = precision_counts(convert(exported, "bert_encoder", "mixed-bf16"))
    atc = precision_counts(convert(exported, "bert_encoder", "allow_mix_precision_bf16"))
    assert ours == atc


def test_a_list_edit_moves_ops_to_f32(exported, tmp_path):
    default = convert(exported, "llama_block", "mixed-bf16")
    edits = tmp_path / "mixlist.json"
    edits.write_text('{"black-list": {"to-add": ["MatMul"]}}')
    edited = convert(exported, "llama_block", "mixed-bf16", modify_mixlist=str(edits))
    matmuls = [name for name, dtype in default.report()["node_dtypes"].items() if dtype == "bf16"]
    assert matmuls, "the default lists put the products in bf16"
    after = edited.report()["node_dtypes"]
    assert all(after.get(name) != "bf16" for name in matmuls), "MatMul moved to the f32 list"
    assert "bf16" not in after.values()  # nothing else was 16-bit but what follows the products


def test_keep_dtype_keeps_a_node_by_name(exported, tmp_path):
    default = convert(exported, "bert_encoder", "bf16")
    low = sorted(name for name, dtype in default.report()["node_dtypes"].items() if dtype == "bf16")
    kept = low[0]
    keep = tmp_path / "keep.txt"
    keep.write_text(f"# nodes that stay as the model has them\n{kept}\n")
    model = convert(exported, "bert_encoder", "bf16", keep_dtype=str(keep))
    assert model.report()["node_dtypes"][kept] == "f32"


def test_fp16_is_refused_without_fast_kernels(exported):
    with pytest.raises(estuary.InputValueError, match="precision mode fp16 refused: the CPU device has no f16 kernels"):
        estuary.convert(str(exported / "bert_encoder.onnx"), precision_mode="fp16")


def test_bf16_is_refused_on_a_cpu_without_avx512_bf16(exported):
    script = ("import estuary, sys\n"
              "try:\n"
              f"    estuary.convert({str(exported / 'bert_encoder.onnx')!r}, precision_mode='bf16')\n"
              "except estuary.InputValueError as error:\n"
              "    print(error)\n"
              "    sys.exit(3)\n")
    environment = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", DNNL_MAX_CPU_ISA="AVX2")
    child = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True, timeout=300)
    assert child.returncode == 3, child.stdout + child.stderr
    assert "precision mode bf16 refused: this CPU lacks AVX512-BF16" in child.stdout
    assert "--allow-slow-precision" in child.stdout


def test_unknown_mode_lists_the_known_ones(exported):
    with pytest.raises(estuary.InputValueError, match="unknown mode 'bf17'.*allow_mix_precision"):
        estuary.convert(str(exported / "bert_encoder.onnx"), precision_mode="bf17")


def test_the_offline_model_keeps_its_precision(exported, tmp_path):
    path = tmp_path / "encoder.eom"
    convert(exported, "bert_encoder", "mixed-bf16", output=str(path))
    info = subprocess.run([os.environ["ESTUARY_CLI"], "convert", "--mode", "info", str(path)], capture_output=True,
                          text=True, timeout=300)
    assert info.returncode == 0, info.stderr
    assert re.search(r"precision: mixed-bf16: \d+ nodes in bf16", info.stdout), info.stdout
    assert "device: cpu" in info.stdout
    loaded = estuary.Model(str(path))
    assert loaded.report()["properties"]["precision"].startswith("mixed-bf16")
