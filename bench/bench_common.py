"""What the framework-against-Estuary benchmarks share (tensorflow_vs_tf.py,
paddle_vs_inference.py): environments, the machine's name, workers timing one engine each
in a fresh process, and the table row of a configuration's rounds.

A benchmark module names its framework engine and how to run it; each measurement runs
`python BENCH --worker ENGINE --model M --inputs X.npz ...` in the environment that engine
needs and prints one JSON line: load seconds, median and p90 latency in ms, peak RSS in MiB.
"""
import argparse
import dataclasses
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENVS = os.path.join(ROOT, ".venvs")


def python_of(environment):
    """The Python of an environment: "base" is .venv, any other .venvs/<name>."""
    if environment == "base":
        return os.path.join(ROOT, ".venv", "bin", "python")
    return os.path.join(ENVS, environment, "bin", "python")


def ensure_environment(name):
    """Makes .venvs/<name> from bench/envs/<name>.txt when missing or changed (once)."""
    directory = os.path.join(ENVS, name)
    requirements = os.path.join(ROOT, "bench", "envs", f"{name}.txt")
    digest = hashlib.sha256(open(requirements, "rb").read()).hexdigest()
    stamp = os.path.join(directory, ".requirements.sha256")
    if os.path.exists(stamp) and open(stamp).read().strip() == digest:
        return
    print(f"making {directory} from {os.path.relpath(requirements, ROOT)} (once)", file=sys.stderr, flush=True)
    if not os.path.exists(python_of(name)):
        subprocess.run([sys.executable, "-m", "venv", directory], check=True)
    subprocess.run([python_of(name), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r",
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


def peak_rss_mib():
    """This process's peak resident set (VmHWM; not ru_maxrss, which exec carries over)."""
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


def report(run, load_seconds, args):
    """Times `run` and prints the worker's JSON line."""
    times = timed(run, args.iterations, args.seconds, args.warmup)
    print(json.dumps({"load_s": load_seconds, "median_ms": statistics.median(times),
                      "p90_ms": sorted(times)[int(0.9 * (len(times) - 1))], "peak_rss_mib": peak_rss_mib()}))


def common_worker(args):
    """The ONNX Runtime and Estuary workers; a benchmark adds its framework's."""
    import numpy as np

    x = np.load(args.inputs)["x"]
    started = time.perf_counter()
    if args.worker == "onnxruntime":
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
    report(run, time.perf_counter() - started, args)


def run_worker(bench, environment, engine, model, inputs, threads, args):
    """One measurement in a fresh process of `environment`; {"error": ...} when it fails."""
    command = [python_of(environment), bench, "--worker", engine, "--model", model, "--inputs", inputs,
               "--threads", str(threads), "--iterations", str(args.iterations), "--seconds", str(args.seconds),
               "--warmup", str(args.warmup)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=os.path.join(ROOT, "build", "python"))
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def wall_time(command):
    """Seconds `command` takes; raises with the last line of its stderr that names an error
    when it fails."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()] or ["failed"]
        raise RuntimeError(next((line for line in reversed(lines) if "rror" in line), lines[-1]))
    return time.perf_counter() - started


def input_name(saved):
    """The first input's name, from `estuary convert --mode info`."""
    cli = os.path.join(ROOT, "build", "bin", "estuary")
    info = subprocess.run([cli, "convert", saved, "--mode", "info"], capture_output=True, text=True, check=True).stdout
    for line in info.splitlines():
        if line.strip().startswith("inputs:"):
            return line.split(":", 2)[1].strip()
    raise RuntimeError(f"{saved}: no inputs in --mode info")


def sample_shape(inputs):
    """The dims of input x in an .npz, as "1,3,224,224" (read in the base environment: the
    driver runs with any python3)."""
    code = f"import numpy; print(','.join(map(str, numpy.load({inputs!r})['x'].shape)))"
    return subprocess.run([python_of("base"), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


HEADER = ("| model | threads | {framework} median / p90 ms | ORT ({converter}) median / p90 ms | Estuary median / p90 ms "
          "| Estuary/{framework} | Estuary/ORT | peak RSS MiB {framework} / ORT / Estuary "
          "| conversion s: {converter} + ORT session / Estuary |\n|---|---|---|---|---|---|---|---|---|")


def row_text(name, threads, rows, failures):
    """A configuration's table row from its rounds (framework, ORT, Estuary results, then the
    converter's and Estuary's conversion seconds): each engine's medians, or the error that
    stopped it (kept in `failures` for the notes under the table)."""
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


@dataclasses.dataclass
class Comparison:
    """What a framework benchmark names; `main` does the rest."""
    bench: str  # the benchmark's file, run again as each worker
    models: tuple
    framework: str  # the framework engine's name in the table
    framework_env: str  # its environment under .venvs, also its worker's name
    converter: str  # the ONNX converter's name in the table
    converter_env: str  # its environment, made from bench/envs/<name>.txt; None: the framework's own
    make_models: object  # (directory) -> None, run in framework_env
    worker: object  # (args) -> None: times the framework engine with report()
    converter_command: object  # (saved, onnx_path) -> the converter's command line
    estuary_source: object  # (saved) -> what `estuary convert` takes


def main(comparison, description):
    """Parses the command line; as a worker, times one engine, else runs every configuration
    and prints the table."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(comparison.models), choices=comparison.models)
    parser.add_argument("--threads", nargs="+", type=int, default=[2])
    name = os.path.splitext(os.path.basename(comparison.bench))[0]
    parser.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), f"estuary_{name}"))
    parser.add_argument("--make-models", help=argparse.SUPPRESS)
    parser.add_argument("--iterations", type=int, default=20, help="at least this many timed runs")
    parser.add_argument("--seconds", type=float, default=4.0, help="and at least this long")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", choices=(comparison.framework_env, "onnxruntime", "estuary"), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_models:
        return comparison.make_models(args.make_models)
    if args.worker:
        args.threads = args.threads[0]
        return comparison.worker(args) if args.worker == comparison.framework_env else common_worker(args)

    if comparison.converter_env:
        ensure_environment(comparison.converter_env)
    os.makedirs(args.workdir, exist_ok=True)
    if not all(os.path.exists(os.path.join(args.workdir, f"{model}.npz")) for model in comparison.models):
        print(f"making the models in {comparison.framework}'s environment", file=sys.stderr, flush=True)
        subprocess.run([python_of(comparison.framework_env), comparison.bench, "--make-models", args.workdir],
                       check=True, stdout=subprocess.DEVNULL)
    cli = os.path.join(ROOT, "build", "bin", "estuary")
    print(f"{cpu_model()}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
    print(HEADER.format(framework=comparison.framework, converter=comparison.converter))
    failures = {}
    for model in args.models:
        saved = os.path.join(args.workdir, model)
        inputs = os.path.join(args.workdir, f"{model}.npz")
        onnx_path, eom = os.path.join(args.workdir, f"{model}.onnx"), os.path.join(args.workdir, f"{model}.eom")
        source = comparison.estuary_source(saved)
        shape = f"{input_name(source)}:{sample_shape(inputs)}"
        for threads in args.threads:
            rows = []
            for _ in range(args.rounds):
                try:  # the converter may fail on a model: its column then says why
                    converter_s = wall_time(comparison.converter_command(saved, onnx_path))
                    onnxruntime = run_worker(comparison.bench, "base", "onnxruntime", onnx_path, inputs, threads, args)
                except RuntimeError as error:
                    converter_s, onnxruntime = None, {"error": f"{comparison.converter} fails: {error}"}
                estuary_s = wall_time([cli, "convert", source, "-o", eom, "--threads",
                                       str(threads), "--log", "error", "--input-shape", shape])
                rows.append((run_worker(comparison.bench, comparison.framework_env, comparison.framework_env, saved,
                                        inputs, threads, args),
                             onnxruntime,
                             run_worker(comparison.bench, "base", "estuary", eom, inputs, threads, args),
                             converter_s, estuary_s))
            print(row_text(model, threads, rows, failures), flush=True)
    for model, error in failures.items():
        print(f"\n{model}: {error}")
