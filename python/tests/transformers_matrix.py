"""transformers models through estuary.torch: small configs, random seeded weights, nothing
downloaded. Used by test_torch_transformers.py and, run as a script, to print the table of
graph breaks, graphs and fallbacks in docs/torch.md:

    PYTHONPATH=build/python .venvs/torch/bin/python python/tests/transformers_matrix.py
"""
import os
import sys
import warnings
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from models import import_torchvision  # noqa: E402  (transformers imports torchvision)

import torch  # noqa: E402

import estuary.torch as et  # noqa: E402

VOCAB = 128


def _transformers():
    import_torchvision()
    import transformers
    return transformers


def configs():
    """{name: (model class, config)} for every model of the matrix."""
    tf = _transformers()
    decoder = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                   intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=64)
    return {
        "gpt2": (tf.GPT2LMHeadModel, tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=64,
                                                   bos_token_id=0, eos_token_id=1)),
        "bert": (tf.BertModel, tf.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                             intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=64)),
        "llama": (tf.LlamaForCausalLM, tf.LlamaConfig(**decoder)),
        "mistral": (tf.MistralForCausalLM, tf.MistralConfig(**decoder, sliding_window=8)),
        "qwen2": (tf.Qwen2ForCausalLM, tf.Qwen2Config(**decoder)),
        "t5": (tf.T5ForConditionalGeneration, tf.T5Config(num_layers=2, num_decoder_layers=2, d_model=64, d_kv=16,
                                                          num_heads=4, d_ff=128, vocab_size=VOCAB,
                                                          decoder_start_token_id=0)),
        "vit": (tf.ViTModel, tf.ViTConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                          intermediate_size=128, image_size=32, patch_size=8)),
    }


GENERATES = ("gpt2", "llama", "mistral", "qwen2", "t5")  # the models with generate


def build(name, attention):
    model_class, config = configs()[name]
    config._attn_implementation = attention
    torch.manual_seed(0)
    return model_class(config).eval()


@dataclass
class Outcome:
    max_error: float = 0.0       # forward: the largest |compiled - eager| over the runs
    same_tokens: bool = True     # generate: greedy tokens equal to eager's
    graphs: int = 0              # graphs the backend compiled
    graph_breaks: int = 0
    warnings: tuple = ()         # estuary's warnings (what ran in PyTorch)
    failures: tuple = ()         # exceptions the backend raised


class _Counting:
    """Counts the backend's calls and failures: Dynamo may recover from a failing backend by
    running the frame eagerly, which the results alone would not show."""

    def __init__(self, backend):
        self.backend, self.calls, self.failures = backend, 0, []

    def __call__(self, gm, example_inputs):
        self.calls += 1
        try:
            return self.backend(gm, example_inputs)
        except torch._dynamo.exc.RestartAnalysis:
            raise  # Dynamo's own control flow (it retraces, e.g. with Python floats as tensors)
        except Exception as error:
            self.failures.append(f"{type(error).__name__}: {error}")
            raise


def _forward_inputs(name, length):
    generator = torch.Generator().manual_seed(length)
    if name == "vit":
        return dict(pixel_values=torch.randn(2, 3, 32, 32, generator=generator))
    ids = torch.randint(0, VOCAB, (2, length), generator=generator)
    if name == "t5":
        return dict(input_ids=ids, decoder_input_ids=ids[:, :5])
    return dict(input_ids=ids)


def run(name, mode, what, attention="sdpa", fallback="error", debug_dir=None):
    """Runs one case of the matrix and returns its Outcome.

    what: "forward" (two sequence lengths, one compilation with dynamic=True), "generate"
    (greedy, default cache) or "generate_static" (greedy, static cache)."""
    model = build(name, attention)
    options = dict(fallback=fallback) if mode == "ge" else {}
    backend = _Counting(et.backend(mode=mode, debug_dir=debug_dir, **options))
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    outcome = Outcome()
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        if what == "forward":
            compiled = torch.compile(model, backend=backend, dynamic=True)
            for length in (8, 13):
                inputs = _forward_inputs(name, length)
                expected, actual = model(**inputs)[0], compiled(**inputs)[0]
                outcome.max_error = max(outcome.max_error, (expected - actual).abs().max().item())
        else:
            prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(1))
            options = dict(max_new_tokens=4, do_sample=False, pad_token_id=0)
            if what == "generate_static":
                options["cache_implementation"] = "static"
            expected = model.generate(prompt, **options)
            model.forward = torch.compile(model.forward, backend=backend, dynamic=True)
            outcome.same_tokens = torch.equal(expected, model.generate(prompt, **options))
    outcome.graphs = backend.calls
    outcome.failures = tuple(backend.failures)
    outcome.graph_breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    outcome.warnings = tuple(str(w.message) for w in caught if str(w.message).startswith("estuary"))
    return outcome


def cases():
    """(name, mode, what, attention) of the matrix: forward with both attention
    implementations, generate with transformers' default (SDPA)."""
    for name in configs():
        for mode in ("ge", "fx"):
            for attention in ("eager", "sdpa"):
                yield name, mode, "forward", attention
            if name in GENERATES:
                for what in ("generate", "generate_static"):
                    yield name, mode, what, "sdpa"


if __name__ == "__main__":
    print("| model | mode | run | attention | graphs | graph breaks | left to PyTorch | result |")
    print("|---|---|---|---|---|---|---|---|")
    for name, mode, what, attention in cases():
        try:
            outcome = run(name, mode, what, attention, fallback="eager")
            result = (f"max err {outcome.max_error:.1e}" if what == "forward"
                      else "same tokens" if outcome.same_tokens else "DIFFERENT TOKENS")
            left = "; ".join(outcome.warnings) or "nothing"
        except Exception as error:  # noqa: BLE001  (a table row per case, whatever happens)
            outcome, result, left = Outcome(), f"FAILED: {type(error).__name__}: {error}", "?"
        print(f"| {name} | {mode} | {what} | {attention} | {outcome.graphs} | {outcome.graph_breaks} | {left} | "
              f"{result} |", flush=True)
