"""Estuary against TensorFlow itself and against ONNX Runtime on tf2onnx's conversion, on Keras
models saved as SavedModels, in one run on the same machine and thread count: median and p90
latency, peak RSS, and conversion time.

    python3 bench/tensorflow_vs_tf.py                                 # every model, 2 threads
    python3 bench/tensorflow_vs_tf.py --models resnet50 --threads 1 2 --rounds 5

Models (random weights, made in TensorFlow's environment): Keras ResNet50 and MobileNetV2 at
224x224, and a BERT-style encoder (4 layers, width 256, 4 heads, MLP 1024, 128 tokens), batch 1.
Engines, each measured in a fresh process that imports one engine, so that peak RSS is its own:
  tensorflow   the SavedModel's serving signature in TensorFlow 2.21 (.venvs/tensorflow)
  onnxruntime  ONNX Runtime 1.30 on `python -m tf2onnx.convert --saved-model` (opset 17)
  estuary      the SavedModel converted by Estuary (`estuary.convert`, O2), in the base .venv
Conversion time: `estuary convert` on the command line (a fresh process: import, translate,
optimize, build, write the .eom) against `python -m tf2onnx.convert` plus ORT's session
creation. The engines alternate --rounds times per configuration; figures are medians over
the rounds and each ratio the median of the rounds' ratios. tf2onnx lives in .venvs/tf2onnx
(bench/envs/tf2onnx.txt), made here on first use.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENVS = os.path.join(ROOT, ".venvs")
MODELS = ("resnet50", "mobilenet_v2", "encoder")


def python_of(environment):
    if environment == "base":
        return os.path.join(ROOT, ".venv", "bin", "python")
    return os.path.join(ENVS, environment, "bin", "python")


def ensure_tf2onnx_environment():
    directory = os.path.join(ENVS, "tf2onnx")
    requirements = os.path.join(ROOT, "bench", "envs", "tf2onnx.txt")
    digest = hashlib.sha256(open(requirements, "rb").read()).hexdigest()
    stamp = os.path.join(directory, ".requirements.sha256")
    if os.path.exists(stamp) and open(stamp).read().strip() == digest:
        return
    print(f"making {directory} from {os.path.relpath(requirements, ROOT)} (once)", file=sys.stderr, flush=True)
    if not os.path.exists(python_of("tf2onnx")):
        subprocess.run([sys.executable, "-m", "venv", directory], check=True)
    subprocess.run([python_of("tf2onnx"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r",
                    requirements], check=True)
    with open(stamp, "w") as out:
        out.write(digest)


def cpu_model():
    """The CPU's name with its family and model numbers (a VM's name is often only the brand)."""
    fields = {}
    with open("/proc/cpuinfo") as info:
        for line in info:
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    return f"{fields.get('model name', 'unknown CPU')} (family {fields.get('cpu family')} model {fields.get('model')})"


# --- Workers (each in its own process) -----------------------------------------------------

def peak_rss_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def timed(run, iterations, seconds, warmup):
    for _ in range(warmup):
        run()
    times = []
    started = time.perf_counter()
    while len(times) < iterations or time.perf_counter() - started < seconds:
        begin = time.perf_counter()
        run()
        times.append((time.perf_counter() - begin) * 1e3)
    return times


def make_models(directory):
    """In TensorFlow's environment: the SavedModels and their inputs."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    def encoder():
        tokens = tf.keras.Input((None, 256), name="tokens")
        hidden = tokens
        for _ in range(4):
            attended = tf.keras.layers.MultiHeadAttention(num_heads=4, key_dim=64)(hidden, hidden)
            hidden = tf.keras.layers.LayerNormalization(epsilon=1e-6)(hidden + attended)
            feed = tf.keras.layers.Dense(1024, activation="gelu")(hidden)
            hidden = tf.keras.layers.LayerNormalization(epsilon=1e-6)(hidden + tf.keras.layers.Dense(256)(feed))
        return tf.keras.Model(tokens, hidden), (128, 256)

    builders = {
        "resnet50": lambda: (tf.keras.applications.ResNet50(weights=None, classifier_activation=None), (224, 224, 3)),
        "mobilenet_v2": lambda: (tf.keras.applications.MobileNetV2(weights=None, classifier_activation=None),
                                 (224, 224, 3)),
        "encoder": encoder,
    }
    for name, build in builders.items():
        tf.keras.utils.set_random_seed(0)
        model, shape = build()
        model.export(os.path.join(directory, name), verbose=False)
        x = np.random.default_rng(0).standard_normal((1,) + shape).astype(np.float32)
        np.savez(os.path.join(directory, f"{name}.npz"), x=x)


def worker(args):
    import numpy as np

    x = np.load(args.inputs)["x"]
    started = time.perf_counter()
    if args.worker == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        serve = tf.saved_model.load(args.model).signatures["serving_default"]
        (key,) = serve.structured_input_signature[1].keys()
        tensor = tf.constant(x)
        run = lambda: serve(**{key: tensor})  # noqa: E731
    elif args.worker == "onnxruntime":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
        feed = {session.get_inputs()[0].name: x}
        run = lambda: session.run(None, feed)  # noqa: E731
    else:
        import estuary

        model = estuary.Model(args.model, threads=args.threads)
        run = lambda: model.run([x])  # noqa: E731
    load_seconds = time.perf_counter() - started
    times = timed(run, args.iterations, args.seconds, args.warmup)
    print(json.dumps({"load_s": load_seconds, "median_ms": statistics.median(times),
                      "p90_ms": sorted(times)[int(0.9 * (len(times) - 1))], "peak_rss_mib": peak_rss_mib()}))


# --- Driver --------------------------------------------------------------------------------

def run_worker(environment, engine, model, inputs, threads, args):
    command = [python_of(environment), __file__, "--worker", engine, "--model", model, "--inputs", inputs,
               "--threads", str(threads), "--iterations", str(args.iterations), "--seconds", str(args.seconds),
               "--warmup", str(args.warmup)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=os.path.join(ROOT, "build", "python"))
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def wall_time(command, env=None):
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--threads", nargs="+", type=int, default=[2])
    parser.add_argument("--iterations", type=int, default=20, help="at least this many timed runs")
    parser.add_argument("--seconds", type=float, default=4.0, help="and at least this long")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "estuary_bench_tf"))
    parser.add_argument("--make-models", help=argparse.SUPPRESS)
    parser.add_argument("--worker", choices=("tensorflow", "onnxruntime", "estuary"), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_models:
        make_models(args.make_models)
        return
    if args.worker:
        args.threads = args.threads[0]
        worker(args)
        return

    ensure_tf2onnx_environment()
    os.makedirs(args.workdir, exist_ok=True)
    if not all(os.path.exists(os.path.join(args.workdir, f"{name}.npz")) for name in MODELS):
        print("making the models in TensorFlow's environment", file=sys.stderr, flush=True)
        subprocess.run([python_of("tensorflow"), __file__, "--make-models", args.workdir], check=True)
    cli = os.path.join(ROOT, "build", "bin", "estuary")
    print(f"{cpu_model()}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
    print("| model | threads | TF median / p90 ms | ORT (tf2onnx) median / p90 ms | Estuary median / p90 ms "
          "| Estuary/TF | Estuary/ORT | peak RSS MiB TF / ORT / Estuary | conversion s: tf2onnx + ORT session / Estuary |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.models:
        saved = os.path.join(args.workdir, name)
        inputs = os.path.join(args.workdir, f"{name}.npz")
        onnx_path = os.path.join(args.workdir, f"{name}.onnx")
        eom = os.path.join(args.workdir, f"{name}.eom")
        shape = subprocess.run([python_of("base"), "-c", f"import numpy; print(','.join(map(str, numpy.load('{inputs}')['x'].shape)))"],
                               capture_output=True, text=True, check=True).stdout.strip()
        for threads in args.threads:
            rows = []
            for _ in range(args.rounds):
                tf2onnx_s = wall_time([python_of("tf2onnx"), "-m", "tf2onnx.convert", "--saved-model", saved,
                                       "--output", onnx_path, "--opset", "17"],
                                      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
                estuary_s = wall_time([cli, "convert", saved, "-o", eom, "--threads", str(threads), "--log", "error",
                                       "--input-shape", f"{_input_name(cli, saved)}:{shape}"])
                tensorflow = run_worker("tensorflow", "tensorflow", saved, inputs, threads, args)
                onnxruntime = run_worker("base", "onnxruntime", onnx_path, inputs, threads, args)
                ours = run_worker("base", "estuary", eom, inputs, threads, args)
                rows.append((tensorflow, onnxruntime, ours, tf2onnx_s, estuary_s))
            print(row_text(name, threads, rows), flush=True)
    for name, error in failures.items():
        print(f"\n{name}: {error}")


failures = {}


def row_text(name, threads, rows):
    """One table row: each engine's medians over the rounds, or the error that stopped it."""
    def cell(index, key, digits=2):
        if any("error" in row[index] for row in rows):
            failures[name] = next(row[index]["error"] for row in rows if "error" in row[index])
            return "fails (below)"
        return f"{statistics.median(row[index][key] for row in rows):.{digits}f}"

    def latency(index):
        median, p90 = cell(index, "median_ms"), cell(index, "p90_ms")
        return median if median.startswith("fails") else f"{median} / {p90}"

    def ratio(index):
        if any("error" in row[index] or "error" in row[2] for row in rows):
            return "-"
        return f"{statistics.median(row[2]['median_ms'] / row[index]['median_ms'] for row in rows):.2f}"

    conversion = "-" if any("error" in row[1] for row in rows) else \
        f"{statistics.median(row[3] + row[1]['load_s'] for row in rows):.1f}"
    return (f"| {name} | {threads} | {latency(0)} | {latency(1)} | {latency(2)} | {ratio(0)} | {ratio(1)} "
            f"| {cell(0, 'peak_rss_mib', 0)} / {cell(1, 'peak_rss_mib', 0)} / {cell(2, 'peak_rss_mib', 0)} "
            f"| {conversion} / {statistics.median(row[4] for row in rows):.1f} |")


def _input_name(cli, saved):
    info = subprocess.run([cli, "convert", saved, "--mode", "info"], capture_output=True, text=True, check=True).stdout
    for line in info.splitlines():
        if line.strip().startswith("inputs:"):
            return line.split(":", 2)[1].strip()
    raise RuntimeError(f"{saved}: no inputs in --mode info")


if __name__ == "__main__":
    main()
