"""Estuary's main job end to end on a real model: build torchvision's ResNet-50 with PyTorch
(random, seeded weights), export it to ONNX, convert it with `estuary convert`, run it, and
compare outputs and latency with ONNX Runtime on the same machine and thread count.

    python examples/onnx_demo.py [--model resnet50] [--threads 2] [--workdir /tmp/estuary_demo]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

# Before torch (which models imports): estuary sets OpenMP's wait policy, which only takes
# effect if it comes before the first OpenMP runtime is loaded.
import estuary  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def median_latency_ms(run, iterations, warmup=3):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(iterations):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="resnet50", choices=sorted(models.MODELS))
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "estuary_demo"))
    parser.add_argument("--estuary", default=os.environ.get("ESTUARY_CLI", "estuary"),
                        help="the estuary command line (default: $ESTUARY_CLI or estuary on PATH)")
    args = parser.parse_args()

    import onnxruntime as ort

    print(f"[1/4] building {args.model} with PyTorch and exporting it to ONNX", flush=True)
    onnx_path, inputs = models.export_onnx(args.model, args.workdir)
    print(f"      {onnx_path} ({os.path.getsize(onnx_path) / 2**20:.1f} MiB graph + external weights)")

    print("[2/4] converting it with `estuary convert`", flush=True)
    eom_path = os.path.join(args.workdir, f"{args.model}.eom")
    shapes = ";".join(f"{name}:{','.join(map(str, value.shape))}" for name, value in inputs.items())
    subprocess.run([args.estuary, "convert", "--model", onnx_path, "-o", eom_path, "--input-shape", shapes,
                    "--threads", str(args.threads)], check=True)

    # One engine at a time: each keeps its worker threads spinning for a while after a run,
    # which would steal the other's cores.
    print("[3/4] running it with Estuary, then with ONNX Runtime", flush=True)
    model = estuary.Model(eom_path, threads=args.threads)
    ours = model.run(inputs)
    estuary_ms = median_latency_ms(lambda: model.run(inputs), args.iterations)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
    theirs = session.run(None, inputs)
    ort_ms = median_latency_ms(lambda: session.run(None, inputs), args.iterations)

    print("[4/4] comparing", flush=True)
    worst = 0.0
    for output, a, b in zip(model.outputs, ours, theirs):
        diff = float(np.max(np.abs(a - b)))
        scale = float(np.max(np.abs(b)))
        worst = max(worst, diff / max(scale, 1e-30))
        print(f"      output {output['name']}: shape {list(a.shape)}, max |estuary - onnxruntime| = {diff:.3g} "
              f"(largest value {scale:.3g})")
    print(f"      median latency, {args.threads} threads: estuary {estuary_ms:.2f} ms, onnxruntime {ort_ms:.2f} ms "
          f"(estuary/onnxruntime = {estuary_ms / ort_ms:.2f}; both in this process, one after the other - "
          f"bench/onnx_vs_ort.py gives each engine a process of its own)")
    if worst > 1e-3:
        sys.exit(f"outputs differ: largest difference is {worst:.3g} of the output's range")


if __name__ == "__main__":
    main()
