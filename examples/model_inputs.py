"""Example inputs of the models in models.py, made with NumPy alone, so that a process
without PyTorch (an ONNX test, a benchmark's engine) can make more of them.

    example_inputs("resnet50", batch=8, seed=1)  # {"x": float32[8, 3, 224, 224]}
"""
import numpy as np


def image_inputs(batch, rng):
    return {"x": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}


def encoder_inputs(batch, rng, seq=128):
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - seq // 8:] = 0  # padding at the end, as a tokenizer leaves it
    return {"input_ids": rng.integers(0, 30522, (batch, seq), dtype=np.int64), "attention_mask": mask}


def decoder_inputs(batch, rng, past=32, layers=12, heads=12, head_dim=64):
    cache = (layers, batch, heads, past, head_dim)
    return {
        "input_ids": rng.integers(0, 50257, (batch, 1), dtype=np.int64),
        "past_keys": rng.standard_normal(cache).astype(np.float32),
        "past_values": rng.standard_normal(cache).astype(np.float32),
    }


def hidden_states_inputs(batch, rng, seq=64, hidden=512):
    return {"x": rng.standard_normal((batch, seq, hidden)).astype(np.float32)}


# name -> inputs(batch, rng)
GENERATORS = {
    "resnet50": image_inputs,
    "mobilenet_v2": image_inputs,
    "bert_encoder": encoder_inputs,
    "gpt2_decoder": decoder_inputs,
    "llama_block": hidden_states_inputs,
}


def example_inputs(name, batch=1, seed=0, **sizes):
    return GENERATORS[name](batch, np.random.default_rng(seed), **sizes)
