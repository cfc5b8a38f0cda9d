"""Estuary against ONNX Runtime and OpenVINO on real models exported from PyTorch, in one run
on the same machine and thread count: median and p90 latency, peak RSS, and Estuary's
conversion time against the others' session creation and model compilation. Each table
starts with the CPU model, the machine's memory read rate (build/bin/bandwidth_probe), the
bar for the memory-bound GPT-2 decode step, whose weight streaming rate follows the table, and
its f32 FMA rate (build/bin/fma_probe), the bar for compute-bound products such as the
encoder's.

    .venvs/torch/bin/python bench/onnx_vs_ort.py                # every model, 1 and 2 threads
    .venvs/torch/bin/python bench/onnx_vs_ort.py --models resnet50 --threads 1 --batches 1
    .venvs/torch/bin/python bench/onnx_vs_ort.py --engines estuary onnxruntime
    .venvs/torch/bin/python bench/onnx_vs_ort.py --threads 2 --busy 1   # one core held by another process
    .venvs/torch/bin/python bench/onnx_vs_ort.py --tuning off   # Estuary's built-in kernel rules only

Each measurement runs in a fresh process that imports only NumPy and one engine, so peak
RSS is the engine's own; OpenVINO runs in .venvs/openvino (bench/envs/openvino.txt, made on
first use). The engines alternate, --rounds times per configuration; each figure is the median
over the rounds, and a ratio the median of the rounds' ratios, so that a slow spell of the
shared machine (it can add 40%) hits all alike. Each engine runs with its own defaults for idle
workers (ONNX Runtime's spin, Estuary's short spin, GOMP_SPINCOUNT=10000 set by `import
estuary`) and for latency: ORT with all graph optimizations, OpenVINO with
PERFORMANCE_HINT=LATENCY and f32 inference precision (its default on CPUs with bf16 would be
bf16), both with the thread count asked for. Estuary converts as `estuary convert` does, with
kernel tuning (--tuning off: the built-in rules), so its load time includes the measuring.
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
ENGINES = ("estuary", "onnxruntime", "openvino")
ENGINE_NAMES = {"estuary": "Estuary", "onnxruntime": "ORT", "openvino": "OpenVINO"}
# The environment each engine's worker runs in (bench_common.python_of).
ENGINE_ENVIRONMENTS = {"estuary": None, "onnxruntime": None, "openvino": "openvino"}


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


def openvino_model(path, inputs, threads, precision="f32"):
    """OpenVINO's (core, compiled model) for `path` at the inputs' shapes, at its latency
    settings with `threads` and the inference precision asked for."""
    import openvino as ov

    core = ov.Core()
    model = core.read_model(path)
    model.reshape({model.input(name).get_any_name(): list(value.shape) for name, value in inputs.items()})
    return core, core.compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads,
                                                   "INFERENCE_PRECISION_HINT": precision})


def ort_session(path, threads):
    """An ONNX Runtime session with every graph optimization and `threads` intra-op threads."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def worker(args):
    """Measures one engine on one model; prints a JSON line."""
    threads = args.threads[0]
    inputs = dict(np.load(args.inputs))
    started = time.perf_counter()
    if args.worker == "estuary":
        import estuary

        shapes = {name: list(value.shape) for name, value in inputs.items()}
        model = estuary.convert(args.onnx, input_shapes=shapes, threads=threads, tune_kernels=args.tuning == "on")
        run = lambda: model.run(inputs)  # noqa: E731
    elif args.worker == "openvino":
        _, compiled = openvino_model(args.onnx, inputs, threads)
        request = compiled.create_infer_request()
        run = lambda: request.infer(inputs)  # noqa: E731
    else:
        session = ort_session(args.onnx, threads)
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
    python = sys.executable
    if ENGINE_ENVIRONMENTS[engine]:
        python = common.python_of(ENGINE_ENVIRONMENTS[engine])
    command = [python, __file__, "--worker", engine, "--onnx", onnx_path, "--inputs", inputs_path,
               "--threads", str(threads), "--iterations", str(args.iterations), "--seconds", str(args.seconds),
               "--warmup", str(args.warmup), "--tuning", args.tuning]
    done = subprocess.run(command, env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def machine_probe(binary, key, threads):
    """A rate per thread count from build/bin/BINARY --json (bandwidth_probe: the memory read rate
    in GB/s; fma_probe: the f32 FMA rate in GFLOP/s), or None without the probe."""
    probe = os.path.join(ROOT, "build", "bin", binary)
    if not os.path.exists(probe):
        return None
    command = [probe, "--json"] + [arg for count in threads for arg in ("--threads", str(count))]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return {row["threads"]: row[key] for row in map(json.loads, done.stdout.splitlines())}


def weight_bytes(onnx_path):
    """The bytes of a model's initializers (external data included), which a decode step reads."""
    import onnx

    model = onnx.load(onnx_path, load_external_data=False)
    return sum(int(np.prod(tensor.dims)) * onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
               for tensor in model.graph.initializer)


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
    parser.add_argument("--tuning", choices=("on", "off"), default="on",
                        help="Estuary's kernel tuning at conversion, as `estuary convert` does (default on)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternate the engines this many times per configuration; medians of the rounds")
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES,
                        help="Estuary and the engines to compare it with")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="keep N other processes spinning on the CPU throughout: how each engine degrades "
                             "when other work holds cores")
    parser.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "estuary_bench_onnx"))
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--onnx", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    engines = ["estuary"] + [engine for engine in args.engines if engine != "estuary"]
    for engine in engines:
        if ENGINE_ENVIRONMENTS[engine]:
            common.ensure_environment(ENGINE_ENVIRONMENTS[engine])
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        compare(engines, args)
    finally:
        for process in busy:
            process.kill()
            process.wait()


def compare(engines, args):

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import models

    print(f"CPU: {common.cpu_model()}; Estuary's kernel tuning {args.tuning}")
    if args.busy:
        print(f"{args.busy} other process{'es' if args.busy > 1 else ''} spinning on the CPU throughout (--busy)")
    probe = machine_probe("bandwidth_probe", "gb_per_s", args.threads)
    if probe:
        print("memory read rate (build/bin/bandwidth_probe, 512 MiB): " +
              ", ".join(f"{rate:.1f} GB/s at {count} thread{'s' if count > 1 else ''}" for count, rate in probe.items()))
    compute = machine_probe("fma_probe", "gflops", args.threads)
    if compute:
        print("f32 FMA rate (build/bin/fma_probe), the bar for large products: " +
              ", ".join(f"{rate:.0f} GFLOP/s at {count} thread{'s' if count > 1 else ''}" for count, rate in compute.items()))
    others = engines[1:]
    names = [ENGINE_NAMES[engine] for engine in engines]
    print("| model | batch | threads | " + " | ".join(f"{name} median / p90 ms" for name in names) + " | " +
          " | ".join(f"Estuary / {ENGINE_NAMES[engine]}" for engine in others) + " | peak RSS MiB (" +
          " / ".join(names) + ") | load s (" + " / ".join(names) + ") |")
    print("|---|---|---|" + "---|" * (2 * len(engines) + 1))
    ratios = {engine: [] for engine in others}
    streaming = []
    for name in args.models:
        for batch in (args.batches if name in CNNS else [1]):
            onnx_path, inputs = models.export_onnx(name, args.workdir, batch=1)
            inputs = models.example_inputs(name, batch)
            inputs_path = os.path.join(args.workdir, f"{name}_b{batch}.npz")
            np.savez(inputs_path, **inputs)
            for threads in args.threads:
                rounds = [{engine: measure(engine, onnx_path, inputs_path, threads, args) for engine in engines}
                          for _ in range(args.rounds)]
                errors = [f"{ENGINE_NAMES[engine]}: {result['error']}" for measured in rounds
                          for engine, result in measured.items() if "error" in result]
                if errors:
                    print(f"| {name} | {batch} | {threads} | {errors[0]} |")
                    continue
                figures = {engine: summarize([measured[engine] for measured in rounds]) for engine in engines}
                row_ratios = {engine: statistics.median(measured["estuary"]["median_ms"] / measured[engine]["median_ms"]
                                                        for measured in rounds) for engine in others}
                for engine, ratio in row_ratios.items():
                    ratios[engine].append(ratio)
                print(f"| {name} | {batch} | {threads} | " +
                      " | ".join(f"{figures[e]['median_ms']:.2f} / {figures[e]['p90_ms']:.2f}" for e in engines) + " | " +
                      " | ".join(f"{row_ratios[e]:.2f}" for e in others) + " | " +
                      " / ".join(f"{figures[e]['peak_rss_mib']:.0f}" for e in engines) + " | " +
                      " / ".join(f"{figures[e]['build_s']:.2f}" for e in engines) + " |", flush=True)
                if name == "gpt2_decoder":
                    weights_gb = weight_bytes(onnx_path) / 1e9
                    streaming.append(f"GPT-2 decode step at {threads} thread{'s' if threads > 1 else ''}: "
                                     f"{weights_gb * 1000:.0f} MB of weights streamed at " +
                                     ", ".join(f"{weights_gb / (figures[e]['median_ms'] / 1000):.1f} GB/s ({ENGINE_NAMES[e]})"
                                               for e in engines) +
                                     (f"; the probe reads {probe[threads]:.1f} GB/s" if probe and threads in probe else ""))
    for line in streaming:
        print(line)
    for engine, values in ratios.items():
        if values:
            target = 0.85 if engine == "onnxruntime" else 0.9
            print(f"median latency ratio Estuary/{ENGINE_NAMES[engine]} over {len(values)} configurations: "
                  f"{statistics.median(values):.2f} (target <= {target})")


if __name__ == "__main__":
    main()
