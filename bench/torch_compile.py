#!/usr/bin/env python3
"""torch.compile backends side by side: eager PyTorch, inductor, Estuary's graph-engine mode
and Estuary's FX mode, on ResNet-18, MobileNetV2, a BERT-like encoder and a LLaMA-style
decoder block (random weights, batch 1). Prints a Markdown table: batch-1 latency (median)
and compile time (the first call minus a steady-state call) for each. After compiling, the
backends' calls alternate (eager, inductor, GE, FX, then inductor first, ...), each model
compiled on a copy of its own, so that the machine's slow and fast spells fall on all of them
alike.

    PYTHONPATH=build/python .venvs/torch/bin/python bench/torch_compile.py --threads 2

Figures, not a test: the machine is shared and noisy. Inductor's caches are off (unless
TORCHINDUCTOR_FORCE_DISABLE_CACHES is set otherwise): with a warm cache from an earlier run
its compile time drops from about 20 s to 2-3 s, which a first compile does not get.
"""
import argparse
import copy
import os
import statistics
import sys
import time

os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

# Before torch, so that the OpenMP runtime torch loads (and Estuary shares) spins only briefly
# between parallel regions (GOMP_SPINCOUNT, set by import estuary) for every backend.
import estuary  # noqa: E402,F401
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))
import estuary.torch as et  # noqa: E402
from torch_models import BertEncoder, LlamaBlock, import_torchvision  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from bench_common import cpu_model  # noqa: E402


def models():
    torchvision = import_torchvision()
    ids = torch.randint(0, 100, (1, 32))
    yield "ResNet-18 (1x3x224x224)", torchvision.models.resnet18(), (torch.randn(1, 3, 224, 224),)
    yield "MobileNetV2 (1x3x224x224)", torchvision.models.mobilenet_v2(), (torch.randn(1, 3, 224, 224),)
    yield "BERT-like, 2 layers (1x32)", BertEncoder(), (ids, torch.ones(1, 32))
    yield "LLaMA-style block (1x32x64)", LlamaBlock(batch=1, max_seq=64), (torch.randn(1, 32, 64), torch.tensor(0))


def first_call(fn, inputs):
    start = time.perf_counter()
    fn(*inputs)
    return time.perf_counter() - start


def interleaved_latencies(fns, inputs, repeats, seconds):
    """Median latency of each function, the calls alternating between them so that the
    machine's slow and fast spells fall on all alike: `repeats` calls each, or more, until
    each function has run for about `seconds` (a sub-millisecond model's median over a
    hundred calls moves by several percent from run to run on a shared machine)."""
    times = {name: [] for name in fns}
    order = list(fns)
    for name in order:
        fns[name](*inputs)  # warm
    start = time.perf_counter()
    fns[order[0]](*inputs)
    repeats = max(repeats, int(seconds / max(time.perf_counter() - start, 1e-6)))
    for repeat in range(repeats):
        # Each backend's turn rotates, so that none always follows the same one (whose
        # threads may still be spinning down).
        for name in order[repeat % len(order):] + order[:repeat % len(order)]:
            start = time.perf_counter()
            fns[name](*inputs)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=20, help="alternating calls per backend, at least")
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="more calls, for models this fast, until each backend has run about this long")
    parser.add_argument("--skip-inductor", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    backends = [("eager", None)]
    if not args.skip_inductor:
        backends.append(("inductor", "inductor"))
    backends += [("estuary ge", et.backend(threads=args.threads)), ("estuary fx", et.backend(mode="fx"))]
    print(f"torch {torch.__version__}, {args.threads} threads, {cpu_model()}, median of at least {args.repeats} "
          f"alternating calls (or about {args.seconds:g} s of them per backend)\n")
    print("| model | " + " | ".join(f"{name} latency (ms)" for name, _ in backends)
          + " | " + " | ".join(f"{name} compile (s)" for name, _ in backends[1:])
          + " | ge vs eager | ge vs inductor | fx vs eager |")
    print("|---" * (2 * len(backends) + 3) + "|")
    for title, model, inputs in models():
        model.eval()
        fns, firsts = {}, {}
        with torch.no_grad():
            for name, backend in backends:
                # A model of its own per backend, so that each compiled one keeps its graphs.
                fn = model if backend is None else torch.compile(copy.deepcopy(model), backend=backend)
                firsts[name] = first_call(fn, inputs)
                fns[name] = fn
            latencies = interleaved_latencies(fns, inputs, args.repeats, args.seconds)
        compiles = {name: max(firsts[name] - latencies[name], 0.0) for name in fns}
        for name in fns:
            print(f"  {title}: {name} {latencies[name] * 1e3:.2f} ms, compile {compiles[name]:.2f} s", file=sys.stderr)
        ge = latencies["estuary ge"]
        row = [title] + [f"{latencies[n] * 1e3:.2f}" for n, _ in backends] + [f"{compiles[n]:.2f}" for n, _ in backends[1:]]
        row.append(f"{latencies['eager'] / ge:.2f}x")
        row.append(f"{latencies['inductor'] / ge:.2f}x" if "inductor" in latencies else "-")
        row.append(f"{latencies['eager'] / latencies['estuary fx']:.2f}x")
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
