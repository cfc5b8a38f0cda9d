"""Estuary's precision modes (`estuary.convert(model, precision_mode=M)`) against its own f32
and against ONNX Runtime and OpenVINO in their own settings, on the models of onnx_vs_ort.py
(ResNet-50 and MobileNetV2 at batch 1 and 8, the BERT-like encoder at 128 tokens, the GPT-2
decode step), in one run on one machine: median latency, the speed-up over Estuary's f32,
how far the outputs move from Estuary's f32 outputs, and peak RSS.

    PYTHONPATH=build/python .venvs/torch/bin/python bench/precision_bench.py          # everything
    PYTHONPATH=build/python .venvs/torch/bin/python bench/precision_bench.py --quick  # smoke, ~30 s
    PYTHONPATH=build/python .venvs/torch/bin/python bench/precision_bench.py --models bert_encoder \\
        gpt2_decoder --threads 1 --modes origin bf16 --others openvino-bf16

On a CPU without fast 16-bit kernels the 16-bit modes run as f32 converted back and forth,
the CNNs 3-5 times slower than in f32, and everything at 1 and 2 threads takes over an hour on 2 cores (ResNet-50 at batch 8 most of it);
--models, --batches, --threads and --modes cut it down.

Settings: Estuary in each --modes (origin is its f32 and the reference, always measured);
ONNX Runtime in f32 (its CPU execution provider has no bf16 or f16 mode for these ops on x86);
OpenVINO with INFERENCE_PRECISION_HINT f32 and bf16. A 16-bit mode that Estuary refuses on
this CPU (fp16 always, since its oneDNN 2.6 has no f16 kernels; bf16 without AVX512-BF16) is
measured with allow_slow_precision=True and marked "refused by default" with the reason
Estuary gave (without AVX512-BF16, bf16 is slow except in products of a few rows).
OpenVINO's worker reports the inference precision it actually compiled with, since it falls
back to f32 where the CPU lacks bf16.

Accuracy, against Estuary's f32 outputs on inputs other than the timed ones: the least cosine
similarity over the outputs, and for the CNNs and the decode step how often the argmax of the
first output (top-1 class, next token) agrees; over 8 images for the CNNs, 4 sequences for the
encoder and 8 decode steps for GPT-2. Latency as in onnx_vs_ort.py, whose model export and engine
environments this reuses: each measurement in a fresh process (NumPy and
one engine), the settings alternating --rounds times per configuration, medians over the
rounds, and each speed-up the median of the rounds' ratios to the same round's Estuary f32.
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
import onnx_vs_ort

ESTUARY_MODES = ("origin", "bf16", "mixed-bf16", "fp16", "mixed-fp16")
OTHER_SETTINGS = ("onnxruntime-f32", "openvino-f32", "openvino-bf16")
REFERENCE = ("estuary", "origin")
# How many inputs the accuracy columns are measured over, per model (images, sequences, steps).
ACCURACY_SAMPLES = {"resnet50": 8, "mobilenet_v2": 8, "bert_encoder": 4, "gpt2_decoder": 8}
# The first output's argmax is a class (CNNs) or the next token (the decode step).
ARGMAX_MODELS = ("resnet50", "mobilenet_v2", "gpt2_decoder")
ACCURACY_SEED = 1000  # the timed inputs use seed 0


def label(setting):
    engine, precision = setting
    mode = "f32 (origin)" if (engine, precision) == REFERENCE else precision
    return f"{onnx_vs_ort.ENGINE_NAMES[engine]} {mode}"


def load_estuary(onnx_path, inputs, threads, mode):
    """The converted model and, when Estuary refuses `mode` on this CPU by default, its reason
    (the model is then converted with allow_slow_precision)."""
    import estuary

    shapes = {name: list(value.shape) for name, value in inputs.items()}
    try:
        return estuary.convert(onnx_path, input_shapes=shapes, threads=threads, precision_mode=mode), None
    except estuary.InputValueError as refusal:
        if "refused" not in str(refusal):
            raise
        model = estuary.convert(onnx_path, input_shapes=shapes, threads=threads, precision_mode=mode,
                                allow_slow_precision=True)
        return model, str(refusal).split(" refused: ", 1)[-1].split(". Build in fp32")[0]


def kernel_tally(report):
    """How many steps run on which kernel: what to look at when a 16-bit mode is slow."""
    tally = {}
    for step in report["kernels"]:
        kernel = step.rsplit(" -> ", 1)[-1]
        tally[kernel] = tally.get(kernel, 0) + 1
    return dict(sorted(tally.items(), key=lambda item: -item[1]))


def worker(args):
    """Times one engine in one setting on one model and prints a JSON line; with --outputs,
    then runs the accuracy inputs and saves the outputs there."""
    threads = args.threads[0]
    inputs = dict(np.load(args.inputs))
    facts = {}
    if args.worker == "estuary":
        model, refusal = load_estuary(args.onnx, inputs, threads, args.precision)
        facts["slow_because"] = refusal
        report = model.report()
        facts["precision"] = report.get("properties", {}).get("precision", "")
        facts["kernels"] = kernel_tally(report)
        run = lambda feed: list(model.run(feed))  # noqa: E731
    elif args.worker == "openvino":
        core, compiled = onnx_vs_ort.openvino_model(args.onnx, inputs, threads, args.precision)
        facts["precision"] = compiled.get_property("INFERENCE_PRECISION_HINT").to_string()
        facts["capabilities"] = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        request = compiled.create_infer_request()

        def run(feed):
            result = request.infer(feed)
            return [np.array(result[output]) for output in compiled.outputs]
    else:
        session = onnx_vs_ort.ort_session(args.onnx, threads)
        run = lambda feed: session.run(None, feed)  # noqa: E731
    times = common.timed(lambda: run(inputs), args.iterations, args.seconds, args.warmup)
    if args.outputs:
        samples = np.load(args.accuracy)
        count = len({key.split("/")[0] for key in samples.files})
        saved = {}
        for index in range(count):
            feed = {name: samples[f"{index}/{name}"] for name in inputs}
            for position, value in enumerate(run(feed)):
                saved[f"{index}/{position}"] = np.asarray(value)
        np.savez(args.outputs, **saved)
    print(json.dumps(dict(facts, median_ms=statistics.median(times),
                          p90_ms=onnx_vs_ort.percentile(times, 0.9), runs=len(times),
                          peak_rss_mib=common.peak_rss_mib())))


def measure(setting, onnx_path, inputs_path, threads, args, accuracy_path=None, outputs_path=None):
    """One setting in a fresh process of its engine's environment; {"error": ...} when it fails."""
    engine, precision = setting
    python = sys.executable
    if onnx_vs_ort.ENGINE_ENVIRONMENTS[engine]:
        python = common.python_of(onnx_vs_ort.ENGINE_ENVIRONMENTS[engine])
    command = [python, __file__, "--worker", engine, "--precision", precision, "--onnx", onnx_path,
               "--inputs", inputs_path, "--threads", str(threads), "--iterations", str(args.iterations),
               "--seconds", str(args.seconds), "--warmup", str(args.warmup)]
    if outputs_path:
        command += ["--accuracy", accuracy_path, "--outputs", outputs_path]
    environment = dict(os.environ, OMP_NUM_THREADS=str(threads))
    try:
        done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"took over {args.timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def cosine(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def accuracy(name, outputs_path, reference_path):
    """The least cosine similarity over the outputs and samples, and the share of argmaxes of
    the first output that agree with Estuary's f32 (None where the model has no such output)."""
    got, want = np.load(outputs_path), np.load(reference_path)
    if sorted(got.files) != sorted(want.files):
        raise RuntimeError(f"{outputs_path}: outputs {sorted(got.files)}, Estuary f32 has {sorted(want.files)}")
    for key in want.files:
        if got[key].shape != want[key].shape:
            raise RuntimeError(f"{outputs_path}: output {key} is {got[key].shape}, Estuary f32's {want[key].shape}")
    least = min(cosine(got[key], want[key]) for key in want.files)
    if name not in ARGMAX_MODELS:
        return least, None
    firsts = [key for key in want.files if key.endswith("/0")]
    agree = np.concatenate([(got[key].argmax(-1) == want[key].argmax(-1)).ravel() for key in firsts])
    return least, float(agree.mean())


def accuracy_inputs(models, name, batch):
    """Inputs for the accuracy columns, other than the timed ones and with the timed shapes:
    for a CNN 8 images in runs of `batch`, else one sample per run."""
    runs = ACCURACY_SAMPLES[name] // batch if name in onnx_vs_ort.CNNS else ACCURACY_SAMPLES[name]
    return {f"{index}/{key}": value for index in range(max(runs, 1))
            for key, value in models.example_inputs(name, batch, seed=ACCURACY_SEED + index).items()}


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def note_of(result, setting):
    engine, precision = setting
    if engine == "estuary" and result.get("slow_because"):
        return f"refused by default: {result['slow_because']}"
    if engine == "openvino" and precision != "f32":
        effective = result.get("precision", "?")
        return f"compiled as {effective}" + ("" if precision in effective else f"; CPU capabilities "
                                             f"{', '.join(result.get('capabilities', []))}")
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(onnx_vs_ort.ALL_MODELS), choices=onnx_vs_ort.ALL_MODELS)
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8], help="for the CNNs; transformers run batch 1")
    parser.add_argument("--modes", nargs="+", default=list(ESTUARY_MODES), choices=ESTUARY_MODES,
                        help="Estuary's precision modes (origin, its f32, is always measured)")
    parser.add_argument("--others", nargs="*", default=list(OTHER_SETTINGS), choices=OTHER_SETTINGS,
                        help="the other engines' settings")
    parser.add_argument("--iterations", type=int, default=5, help="at least this many timed runs")
    parser.add_argument("--seconds", type=float, default=2.0, help="and at least this long")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternate the settings this many times per configuration; medians of the rounds")
    parser.add_argument("--timeout", type=float, default=300, help="seconds a measurement may take")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: MobileNetV2 batch 1, 1 thread, origin and bf16 against OpenVINO bf16, 1 round")
    parser.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "estuary_bench_onnx"))
    parser.add_argument("--kernels", help="write each Estuary setting's kernel tally (node kinds) to this JSON file")
    parser.add_argument("--worker", choices=onnx_vs_ort.ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--precision", help=argparse.SUPPRESS)
    parser.add_argument("--onnx", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--accuracy", help=argparse.SUPPRESS)
    parser.add_argument("--outputs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.quick:
        args.models, args.batches, args.threads, args.rounds = ["mobilenet_v2"], [1], [1], 1
        args.modes, args.others, args.iterations, args.seconds, args.warmup = ["bf16"], ["openvino-bf16"], 3, 0.5, 1

    settings = [REFERENCE] + [("estuary", mode) for mode in args.modes if mode != "origin"] + \
        [tuple(other.split("-", 1)) for other in args.others]
    for engine in {engine for engine, _ in settings}:
        if onnx_vs_ort.ENGINE_ENVIRONMENTS[engine]:
            common.ensure_environment(onnx_vs_ort.ENGINE_ENVIRONMENTS[engine])
    sys.path.insert(0, os.path.join(common.ROOT, "examples"))
    import models

    print(f"CPU: {common.cpu_model()}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"load before: {uptime()}")
    print("| model | batch | threads | engine, precision | median / p90 ms | speed-up over Estuary f32 "
          "| least cosine vs Estuary f32 | top-1 / next-token agreement | peak RSS MiB | note |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    kernels, verdicts = {}, []
    started = time.perf_counter()
    for threads in args.threads:
        for name in args.models:
            for batch in (args.batches if name in onnx_vs_ort.CNNS else [1]):
                onnx_path, _ = models.export_onnx(name, args.workdir, batch=1)
                inputs_path = os.path.join(args.workdir, f"{name}_b{batch}.npz")
                np.savez(inputs_path, **models.example_inputs(name, batch))
                accuracy_path = os.path.join(args.workdir, f"{name}_b{batch}_accuracy.npz")
                np.savez(accuracy_path, **accuracy_inputs(models, name, batch))

                def outputs_of(setting):
                    return os.path.join(args.workdir, f"{name}_b{batch}_t{threads}_{'_'.join(setting)}_outputs.npz")

                # The first round also saves each setting's outputs on the accuracy inputs.
                rounds = [{setting: measure(setting, onnx_path, inputs_path, threads, args, accuracy_path,
                                            outputs_of(setting) if index == 0 else None)
                           for setting in settings} for index in range(args.rounds)]
                reference_failed = any("error" in measured[REFERENCE] for measured in rounds)
                medians = {}
                for setting in settings:
                    results = [measured[setting] for measured in rounds]
                    prefix = f"| {name} | {batch} | {threads} | {label(setting)} |"
                    failure = next((result["error"] for result in results if "error" in result), None)
                    if failure:
                        print(f"{prefix} fails: {failure} | | | | | |", flush=True)
                        continue
                    median = statistics.median(result["median_ms"] for result in results)
                    p90 = statistics.median(result["p90_ms"] for result in results)
                    rss = statistics.median(result["peak_rss_mib"] for result in results)
                    speedup, least, agree = "-", "-", "-"
                    if not reference_failed:
                        ratio = statistics.median(measured[REFERENCE]["median_ms"] / measured[setting]["median_ms"]
                                                  for measured in rounds)
                        speedup = f"{ratio:.2f}"
                        medians[setting] = (median, ratio)
                        if setting != REFERENCE:
                            try:
                                cos, share = accuracy(name, outputs_of(setting), outputs_of(REFERENCE))
                                least, agree = f"{cos:.5f}", "-" if share is None else f"{share:.0%}"
                            except RuntimeError as mismatch:  # one setting's odd outputs must not end the run
                                least = f"fails: {mismatch}"
                    if setting[0] == "estuary" and "kernels" in results[0]:
                        kernels[f"{name} b{batch} t{threads} {setting[1]}"] = {
                            "precision": results[0].get("precision", ""), "kernels": results[0]["kernels"]}
                    print(f"{prefix} {median:.2f} / {p90:.2f} | {speedup} | {least} | {agree} | {rss:.0f} "
                          f"| {note_of(results[0], setting)} |", flush=True)
                if ("estuary", "bf16") in medians and name in ("bert_encoder", "gpt2_decoder"):
                    verdicts.append(target_verdict(name, threads, medians))
    print(f"load after: {uptime()}; {(time.perf_counter() - started) / 60:.1f} minutes")
    for line in verdicts:
        print(line)
    if args.kernels:
        with open(args.kernels, "w") as out:
            json.dump(kernels, out, indent=1)


def target_verdict(name, threads, medians):
    """The issue's target: bf16 at least 1.6x Estuary's f32 on the encoder and the decode step,
    and faster than the other engines in the same mode (ONNX Runtime has only f32)."""
    bf16_ms, speedup = medians[("estuary", "bf16")]
    others = [(setting, ms) for setting, (ms, _) in medians.items()
              if setting in (("openvino", "bf16"), ("onnxruntime", "f32"))]
    beaten = ", ".join(f"{label(setting)} {ms / bf16_ms:.2f}x Estuary bf16's time" for setting, ms in others)
    met = speedup >= 1.6 and all(ms > bf16_ms for _, ms in others)
    return (f"{name} at {threads} thread{'s' if threads > 1 else ''}: Estuary bf16 {speedup:.2f}x its f32 "
            f"(target >= 1.6); {beaten}: target {'met' if met else 'not met'}")


if __name__ == "__main__":
    main()
