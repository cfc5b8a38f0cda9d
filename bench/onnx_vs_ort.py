"""Estuary against ONNX Runtime on real models exported from PyTorch, in one run on the same
machine and thread count: median and p90 latency, peak RSS, and Estuary's conversion time
against ORT's session creation.

    .venvs/torch/bin/python bench/onnx_vs_ort.py                # every model, 1 and 2 threads
    .venvs/torch/bin/python bench/onnx_vs_ort.py --models resnet50 --threads 1 --batches 1

Each measurement runs in a fresh process that imports only NumPy and one engine, so peak
RSS is the engine's own. The engines alternate, --rounds times per configuration; each
figure is the median over the rounds, and the ratio the median of the rounds' ratios, so that
a slow spell of the shared machine (it can add 40%) hits both alike. Each engine runs with its own defaults for idle workers: ONNX Runtime's
spin, Estuary's short spin (GOMP_SPINCOUNT=10000, set by `import estuary`).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import bench_common as common

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CNNS = ("resnet50", "mobilenet_v2")
ALL_MODELS = ("resnet50", "mobilenet_v2", "bert_encoder", "gpt2_decoder")


def peak_rss_mib():
    """This process's peak resident set (VmHWM). Not getrusage's ru_maxrss: Linux carries
    that over exec from the parent, so a worker started by a parent that had imported torch
    would report the parent's size."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def worker(args):
    """Measures one engine on one model; prints a JSON line."""
    threads = args.threads[0]
    inputs = dict(np.load(args.inputs))
    started = time.perf_counter()
    if args.worker == "estuary":
        import estuary

        shapes = {name: list(value.shape) for name, value in inputs.items()}
        model = estuary.convert(args.onnx, input_shapes=shapes, threads=threads)
        run = lambda: model.run(inputs)  # noqa: E731
    else:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(args.onnx, options, providers=["CPUExecutionProvider"])
        run = lambda: session.run(None, inputs)  # noqa: E731
    build_seconds = time.perf_counter() - started
    times = common.timed(run, args.iterations, args.seconds, args.warmup)
    print(json.dumps({
        "build_s": build_seconds,
        "median_ms": statistics.median(times),
        "p90_ms": percentile(times, 0.9),
        "runs": len(times),
        "peak_rss_mib": peak_rss_mib(),
    }))


def measure(engine, onnx_path, inputs_path, threads, args):
    environment = dict(os.environ, OMP_NUM_THREADS=str(threads))
    command = [sys.executable, __file__, "--worker", engine, "--onnx", onnx_path, "--inputs", inputs_path,
               "--threads", str(threads), "--iterations", str(args.iterations), "--seconds", str(args.seconds),
               "--warmup", str(args.warmup)]
    done = subprocess.run(command, env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarize(results):
    """One engine's figures over the rounds: the median of each (its round ratios are taken
    pair by pair, so that a slow spell of the shared machine hits both engines alike)."""
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(ALL_MODELS), choices=ALL_MODELS)
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8], help="for the CNNs; transformers run batch 1")
    parser.add_argument("--iterations", type=int, default=20, help="at least this many timed runs")
    parser.add_argument("--seconds", type=float, default=5.0, help="and at least this long")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternate the two engines this many times per configuration; medians of the rounds")
    parser.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "estuary_bench_onnx"))
    parser.add_argument("--worker", choices=("estuary", "onnxruntime"), help=argparse.SUPPRESS)
    parser.add_argument("--onnx", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import models

    rows = []
    print("| model | batch | threads | Estuary median / p90 ms | ORT median / p90 ms | ratio | Estuary / ORT peak RSS MiB "
          "| Estuary convert s / ORT session s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.models:
        for batch in (args.batches if name in CNNS else [1]):
            onnx_path, inputs = models.export_onnx(name, args.workdir, batch=1)
            inputs = models.example_inputs(name, batch)
            inputs_path = os.path.join(args.workdir, f"{name}_b{batch}.npz")
            np.savez(inputs_path, **inputs)
            for threads in args.threads:
                pairs = []
                for _ in range(args.rounds):
                    pairs.append((measure("estuary", onnx_path, inputs_path, threads, args),
                                  measure("onnxruntime", onnx_path, inputs_path, threads, args)))
                errors = [result["error"] for pair in pairs for result in pair if "error" in result]
                if errors:
                    print(f"| {name} | {batch} | {threads} | {errors[0]} | | | | |")
                    continue
                ours, theirs = (summarize([pair[k] for pair in pairs]) for k in (0, 1))
                ratio = statistics.median(a["median_ms"] / b["median_ms"] for a, b in pairs)
                print(f"| {name} | {batch} | {threads} | {ours['median_ms']:.2f} / {ours['p90_ms']:.2f} "
                      f"| {theirs['median_ms']:.2f} / {theirs['p90_ms']:.2f} | {ratio:.2f} "
                      f"| {ours['peak_rss_mib']:.0f} / {theirs['peak_rss_mib']:.0f} "
                      f"| {ours['build_s']:.2f} / {theirs['build_s']:.2f} |", flush=True)
                rows.append(ratio)
    if rows:
        print(f"\nmedian latency ratio Estuary/ORT over {len(rows)} configurations: "
              f"{statistics.median(rows):.2f} (target <= 0.85)")


if __name__ == "__main__":
    main()
