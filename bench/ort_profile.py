"""Where ONNX Runtime's time goes, per op type: its session profiler over many runs, to set
beside `estuary bench MODEL.eom --profile` for the same model, inputs and threads. Figures,
not a test; runs in the environment that has onnxruntime (.venvs/torch).

    .venvs/torch/bin/python bench/ort_profile.py MODEL.onnx INPUTS.npz --threads 2 [--batch 8] [--runs 30] [--nodes]

INPUTS.npz holds one array per graph input (bench/serve_bench.py leaves MODEL.inputs.npz
beside the models it exports); --batch N repeats each along its first axis to N rows.
Prints the median run and, per op type, the mean time per run and the nodes of that type;
with --nodes, then each node's mean time per run.
"""

import argparse
import collections
import json
import os
import statistics
import tempfile

import numpy as np
import onnxruntime


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("inputs", help=".npz with an array per graph input")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads")
    parser.add_argument("--batch", type=int, help="repeat each input along its first axis to this many rows")
    parser.add_argument("--runs", type=int, default=30, help="runs counted, after 3 left out")
    parser.add_argument("--nodes", action="store_true", help="then every node, slowest first (as `estuary bench "
                        "--profile --profile-steps 0` lists them)")
    args = parser.parse_args()

    with np.load(args.inputs) as archive:
        feed = {name: archive[name] for name in archive.files}
    if args.batch:
        feed = {name: np.repeat(value[:1], args.batch, axis=0) for name, value in feed.items()}

    warmup = 3
    with tempfile.TemporaryDirectory() as workdir:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(workdir, "ort")
        session = onnxruntime.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
        for _ in range(warmup + args.runs):
            session.run(None, feed)
        with open(session.end_profiling()) as file:
            events = json.load(file)

    # The first runs (allocations, first touches of the weights) are left out.
    all_runs = sorted((event for event in events if event.get("name") == "model_run"), key=lambda event: event["ts"])
    timed_from = all_runs[warmup]["ts"]
    runs = [event["dur"] / 1e3 for event in all_runs[warmup:]]
    per_op, nodes, per_node = collections.defaultdict(float), collections.Counter(), collections.defaultdict(float)
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time") and event["ts"] >= timed_from:
            per_op[event["args"]["op_name"]] += event["dur"] / 1e3
            nodes[event["args"]["op_name"]] += 1
            per_node[(event["name"].removesuffix("_kernel_time"), event["args"]["op_name"])] += event["dur"] / 1e3
    print(f"{len(runs)} runs at {args.threads} threads, median run {statistics.median(runs):.3f} ms")
    for op, total in sorted(per_op.items(), key=lambda item: -item[1]):
        print(f"  {total / len(runs):10.3f} ms  {nodes[op] // len(runs):4d} nodes  {op}")
    if args.nodes:
        print("nodes:")
        for (node, op), total in sorted(per_node.items(), key=lambda item: -item[1]):
            print(f"  {total / len(runs):10.3f} ms  {node} ({op})")


if __name__ == "__main__":
    main()
