"""Real models built with PyTorch 2.13 (random, seeded weights), exported with
torch.onnx.export, converted by Estuary and compared with ONNX Runtime 1.30 on the same
inputs: torchvision's ResNet-50 and MobileNetV2, a BERT-base-like encoder at sequence 128,
and a GPT-2-small-like decoder step with a KV cache whose length stays symbolic.

This test runs in the base environment, without PyTorch: the models are exported in
PyTorch's environment (examples/models.py run there) and cached between runs."""
import sys

import numpy as np
import onnxruntime as ort
import pytest

import environments
import estuary

EXAMPLES = environments.ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
import model_inputs  # noqa: E402

# f32 tolerance: both engines accumulate in f32 but in different orders (blocked convolutions,
# fused epilogues), so deep networks differ by a few ulps of their largest values.
RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(scope="module")
def exported():
    """The exported models' directory: <name>.onnx and <name>.inputs.npz for each."""
    return environments.made("torch", EXAMPLES / "models.py", "resnet50", "mobilenet_v2", "bert_encoder",
                             "gpt2_decoder", key_files=[EXAMPLES / "model_inputs.py"])


def export(directory, name):
    with np.load(directory / f"{name}.inputs.npz") as inputs:
        return str(directory / f"{name}.onnx"), dict(inputs)


def onnxruntime_outputs(path, inputs):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def assert_close(actual, expected):
    assert len(actual) == len(expected)
    for index, (got, want) in enumerate(zip(actual, expected)):
        assert got.shape == want.shape, f"output {index}"
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL * max(1.0, float(np.abs(want).max())),
                                   err_msg=f"output {index}")


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2", "bert_encoder"])
def test_model_matches_onnxruntime(name, exported):
    path, inputs = export(exported, name)
    model = estuary.Model(path)
    assert_close(model.run(inputs), onnxruntime_outputs(path, inputs))


def test_cnn_batch_stays_symbolic(exported):
    path, _ = export(exported, "mobilenet_v2")
    model = estuary.Model(path)
    assert isinstance(model.inputs[0]["shape"][0], str)
    for batch in (2, 3):
        inputs = model_inputs.example_inputs("mobilenet_v2", batch, seed=batch)
        assert_close(model.run(inputs), onnxruntime_outputs(path, inputs))


def test_decoder_step_with_kv_cache_of_any_length(exported):
    path, _ = export(exported, "gpt2_decoder")
    model = estuary.Model(path)
    for past in (32, 5):
        inputs = model_inputs.example_inputs("gpt2_decoder", 1, seed=past, past=past)
        actual = model.run(inputs)
        assert actual[1].shape == (12, 1, 12, past + 1, 64)
        assert_close(actual, onnxruntime_outputs(path, inputs))
