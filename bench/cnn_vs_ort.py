"""Estuary (cnn_bench) against ONNX Runtime (ort_cnn.py) on ResNet-50 and MobileNetV2, batch
1 and 8, 1 and 2 threads. Each configuration runs `--rounds` times, the two alternating so
that both see the same load; the table gives the median of the rounds' medians and the
ratio Estuary / ONNX Runtime (below 1: Estuary is faster).

    python3 bench/cnn_vs_ort.py [--build build] [--rounds 3] [--seconds 3]

Run it with a Python that has onnx and onnxruntime; both sides run with idle workers
sleeping (OMP_WAIT_POLICY=passive, session.intra_op.allow_spinning=0).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def median_ms(command, pattern):
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    for line in output.splitlines():
        if re.search(pattern, line):
            cells = line.split("|")
            return float(cells[2] if "Estuary" in line else cells[5])
    raise RuntimeError(f"no line matching {pattern!r} in the output of {' '.join(command)}:\n{output}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--models", default="resnet50,mobilenetv2")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    bench = os.path.join(args.build, "bin", "cnn_bench")
    print("| model | batch | threads | Estuary (ms) | ONNX Runtime (ms) | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for model in args.models.split(","):
        for batch in args.batches.split(","):
            for threads in args.threads.split(","):
                common = ["--model", model, "--batch", batch, "--threads", threads, "--seconds", str(args.seconds)]
                estuary, ort = [], []
                for _ in range(args.rounds):
                    estuary.append(median_ms([bench, "--layouts-only", "1"] + common, r"Estuary, layout assignment"))
                    ort.append(median_ms([sys.executable, os.path.join(HERE, "ort_cnn.py")] + common,
                                         r"ONNX Runtime"))
                e, o = statistics.median(estuary), statistics.median(ort)
                print(f"| {model} | {batch} | {threads} | {e:.2f} | {o:.2f} | {e / o:.2f} |", flush=True)


if __name__ == "__main__":
    main()
