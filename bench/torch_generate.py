#!/usr/bin/env python3
"""Greedy generate with a Llama-family model of about 100M parameters (transformers, random
weights, batch 1): prefill and decode tokens per second with eager PyTorch, inductor and
Estuary's two torch.compile modes, in one run. Each backend compiles model.forward with
dynamic=True; one warm-up generate, then rounds of the backends in turn (the order rotating
from round to round), medians.

    PYTHONPATH=build/python .venvs/torch/bin/python bench/torch_generate.py --threads 2

prefill: the prompt's tokens / the time of generate(max_new_tokens=1); decode: the further
tokens / (generate(max_new_tokens=N) - that). Figures, not a test: the machine is shared.
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import estuary  # noqa: E402,F401  (before torch: the OpenMP runtime's spin setting)
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import estuary.torch as et  # noqa: E402
from models import import_torchvision  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from bench_common import cpu_model  # noqa: E402


def llama_100m():
    import_torchvision()
    import transformers
    config = transformers.LlamaConfig(hidden_size=768, num_hidden_layers=8, num_attention_heads=12,
                                      num_key_value_heads=4, intermediate_size=2048, vocab_size=32000,
                                      max_position_embeddings=1024)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


def timed_generate(model, prompt, new_tokens):
    start = time.perf_counter()
    tokens = model.generate(prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                            pad_token_id=0)
    return time.perf_counter() - start, tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=128, help="prompt tokens (default 128)")
    parser.add_argument("--new-tokens", type=int, default=32, help="generated tokens (default 32)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--skip-inductor", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    backends = [("eager", None), ("estuary ge", et.backend(mode="ge", threads=args.threads)),
                ("estuary fx", et.backend(mode="fx"))]
    if not args.skip_inductor:
        backends.insert(1, ("inductor", "inductor"))
    prompt = torch.randint(0, 32000, (1, args.prompt), generator=torch.Generator().manual_seed(0))
    models, reference = {}, None
    with torch.no_grad():
        for name, backend in backends:
            model = llama_100m()
            if backend is not None:
                model.forward = torch.compile(model.forward, backend=backend, dynamic=True)
            start = time.perf_counter()
            _, tokens = timed_generate(model, prompt, args.new_tokens)  # compiles prefill and decode graphs
            print(f"{name}: first generate {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
            reference = tokens if reference is None else reference
            if not torch.equal(tokens, reference):
                print(f"{name}: tokens differ from eager's", file=sys.stderr)
            models[name] = model
        prefill, decode = {n: [] for n in models}, {n: [] for n in models}
        order = list(models)
        for round_number in range(args.rounds):
            # Each engine's turn rotates, so that none always follows the same one.
            for name in order[round_number % len(order):] + order[:round_number % len(order)]:
                model = models[name]
                first, _ = timed_generate(model, prompt, 1)
                whole, _ = timed_generate(model, prompt, args.new_tokens)
                prefill[name].append(args.prompt / first)
                decode[name].append((args.new_tokens - 1) / max(whole - first, 1e-9))
    parameters = sum(p.numel() for p in next(iter(models.values())).parameters())
    print(f"Llama, {parameters / 1e6:.0f}M parameters, prompt {args.prompt}, {args.new_tokens} new tokens, "
          f"{args.threads} threads, {cpu_model()}; medians of {args.rounds} rounds\n")
    print("| engine | prefill tokens/s | decode tokens/s | prefill vs eager | decode vs eager |")
    print("|---|---|---|---|---|")
    base_prefill, base_decode = statistics.median(prefill["eager"]), statistics.median(decode["eager"])
    for name in models:
        p, d = statistics.median(prefill[name]), statistics.median(decode[name])
        print(f"| {name} | {p:.0f} | {d:.1f} | {p / base_prefill:.2f}x | {d / base_decode:.2f}x |")


if __name__ == "__main__":
    main()
