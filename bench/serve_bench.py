"""Serving over HTTP on Ray Serve: estuary.serve against the same Ray Serve deployment running
ONNX Runtime, for ResNet-50 and the BERT-base-like encoder (examples/models.py, random
weights, batch 1 per request), with 1 replica of 2 CPUs and 2 replicas of 1 CPU, batching
off (--max-batch 1) and on (up to 8 rows, 5 ms wait). Figures, not a test.

    PYTHONPATH=build/python .venvs/ray/bin/python bench/serve_bench.py
    PYTHONPATH=build/python .venvs/ray/bin/python bench/serve_bench.py --models resnet50 --seconds 10

One local Ray cluster (2 CPUs) serves each configuration in turn; closed-loop clients in
this process (--clients, each sending its next request when the last is answered) post .npz
bodies for --seconds after a warm-up, and the figures are requests per second and the p50
and p99 of the latency the clients see. Engines alternate per configuration, --rounds times;
figures are medians over rounds. The ONNX Runtime deployment is what a user would write
today: the same HTTP handling, @serve.batch merging (concatenated, unpadded: ONNX Runtime
has no plans to prebuild), one run at a time on a session with intra-op threads equal to the
replica's CPUs. `--engines estuary onnxruntime onnxruntime-queue` adds ONNX Runtime behind
estuary.serve's own queue (a run formed when the model is free), to compare the engines
under the same batching. The models are exported once by PyTorch (.venvs/torch) into
--workdir; --models mobilenet_v2 adds a smaller CNN.
"""
import argparse
import asyncio
import concurrent.futures
import io
import math
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np
import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_common as common  # noqa: E402

MODELS = ("resnet50", "bert_encoder")  # the default; mobilenet_v2 too on request
CHOICES = MODELS + ("mobilenet_v2",)
ENGINES = ("estuary", "onnxruntime")  # the default; onnxruntime-queue on request
ENGINE_NAMES = {"estuary": "Estuary", "onnxruntime": "ORT", "onnxruntime-queue": "ORT queued"}


def exported(name, workdir):
    """<workdir>/<name>.onnx and its example inputs (batch 1), exported once in PyTorch's environment."""
    path = os.path.join(workdir, f"{name}.onnx")
    if not os.path.exists(path):
        os.makedirs(workdir, exist_ok=True)
        subprocess.run([common.python_of("torch"), os.path.join(ROOT, "examples", "models.py"), workdir, name],
                       check=True, stdout=subprocess.DEVNULL)
    with np.load(os.path.join(workdir, f"{name}.inputs.npz")) as inputs:
        return path, dict(inputs)


def onnxruntime_deployment():
    """The ONNX Runtime deployment (defined here, so that Ray ships it to the replicas by value)."""
    import onnxruntime as ort
    import ray
    from ray import serve
    from starlette.requests import Request
    from starlette.responses import Response

    from estuary.serve import codec
    from estuary.serve.run_queue import RunQueue

    def rows_of(feeds):
        return len(next(iter(feeds.values())))

    def total_rows(batch):
        return sum(rows_of(feeds) for feeds in batch)

    @serve.deployment
    class OnnxRuntimeModel:
        def __init__(self, path, max_batch, batch_wait_ms, queued):
            cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
            options = ort.SessionOptions()
            options.intra_op_num_threads = max(1, math.ceil(cpus))
            options.inter_op_num_threads = 1
            self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            self.names = [output.name for output in self.session.get_outputs()]
            self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)
            self.run_merged.set_max_batch_size(max_batch)
            self.run_merged.set_batch_wait_timeout_s(batch_wait_ms / 1e3)
            self.queue = RunQueue(self.run_batch, max_batch, batch_wait_ms / 1e3) if queued else None

        async def __call__(self, request: Request):
            feeds = codec.decode_npz(await request.body(), 64 << 20)
            outputs = await (self.queue.submit(feeds, rows_of(feeds)) if self.queue else self.run_merged(feeds))
            return Response(codec.encode(outputs, codec.NPZ), media_type=codec.NPZ)

        @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.005, batch_size_fn=total_rows)
        async def run_merged(self, batch):
            return await self.run_batch(batch)

        async def run_batch(self, batch):
            return await asyncio.get_running_loop().run_in_executor(self.executor, self.run, batch)

        def run(self, batch):
            merged = {name: np.concatenate([feeds[name] for feeds in batch]) for name in batch[0]}
            outputs = dict(zip(self.names, self.session.run(None, merged)))
            results, start = [], 0
            for feeds in batch:
                rows = rows_of(feeds)
                results.append({name: output[start:start + rows] for name, output in outputs.items()})
                start += rows
            return results

    return OnnxRuntimeModel


def application(engine, path, replicas, max_batch, batch_wait_ms, timing_cache):
    import estuary.serve

    cpus = 2 / replicas
    if engine == "estuary":
        tuning = dict(tuning=True, timing_cache=timing_cache) if timing_cache else {}
        return estuary.serve.application(path, replicas=replicas, replica_cpus=cpus, max_batch=max_batch,
                                         batch_wait_ms=batch_wait_ms, **tuning)
    return onnxruntime_deployment().options(
        num_replicas=replicas, ray_actor_options={"num_cpus": cpus},
        max_ongoing_requests=max(8, 2 * max_batch)).bind(path, max_batch, batch_wait_ms,
                                                         queued=engine == "onnxruntime-queue")


def load(url, body, clients, warmup_s, seconds):
    """Closed-loop clients posting `body`: (requests per second, p50 ms, p99 ms) of the timed window."""
    start, stop = time.perf_counter() + warmup_s, time.perf_counter() + warmup_s + seconds
    latencies, lock = [], threading.Lock()

    def client():
        with requests.Session() as session:
            while True:
                sent = time.perf_counter()
                if sent >= stop:
                    return
                response = session.post(url, data=body, headers={"Content-Type": "application/octet-stream"},
                                        timeout=120)
                answered = time.perf_counter()
                if response.status_code != 200:
                    raise RuntimeError(f"{url}: HTTP {response.status_code}: {response.text[:200]}")
                if sent >= start and answered <= stop:
                    with lock:
                        latencies.append((answered - sent) * 1e3)

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(client) for _ in range(clients)]:
            future.result()
    p50, p99 = np.percentile(latencies, [50, 99])
    return len(latencies) / seconds, p50, p99


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=CHOICES)
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=list(ENGINE_NAMES),
                        help="onnxruntime-queue: ONNX Runtime behind estuary.serve's RunQueue instead of @serve.batch, "
                        "to compare the engines under the same batching")
    parser.add_argument("--replicas", nargs="+", type=int, default=[1, 2], help="each of 2/N CPUs")
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8], help="max_batch values; 1 is off")
    parser.add_argument("--batch-wait-ms", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0, help="timed window per measurement")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of load before the window")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "estuary_bench_serve"))
    parser.add_argument("--port", type=int, default=8321)
    parser.add_argument("--estuary-tuning", action="store_true",
                        help="Estuary's replicas tune their plans (estuary.serve --tuning on) with a timing cache in "
                        "--workdir: the first round's replicas measure while starting, later rounds reuse it")
    args = parser.parse_args()
    timing_cache = os.path.join(args.workdir, "serve_bench.timing_cache") if args.estuary_tuning else None
    engines = ["estuary"] + [engine for engine in dict.fromkeys(args.engines) if engine != "estuary"]
    others = engines[1:]

    import ray
    from ray import serve

    ray.init(num_cpus=2, object_store_memory=256 << 20, include_dashboard=False, log_to_driver=False)
    serve.start(http_options={"host": "127.0.0.1", "port": args.port}, logging_config={"enable_access_log": False})
    url = f"http://127.0.0.1:{args.port}/"
    print(f"CPU: {common.cpu_model()}; {args.clients} clients, {args.seconds:g} s per measurement after "
          f"{args.warmup:g} s of warm-up, {args.rounds} round{'s' if args.rounds > 1 else ''}, medians; Estuary's "
          + (f"replicas tune (timing cache {timing_cache})" if timing_cache else "kernels from the built-in rules"))
    print("| model | replicas x CPUs | batching | " +
          " | ".join(f"{ENGINE_NAMES[engine]} req/s, p50 / p99 ms" for engine in engines) +
          "".join(f" | Estuary / {ENGINE_NAMES[other]} req/s" for other in others) + " |")
    print("|---|---|---|" + "---|" * (len(engines) + len(others)))
    for name in args.models:
        path, inputs = exported(name, args.workdir)
        buffer = io.BytesIO()
        np.savez(buffer, **inputs)
        for replicas in args.replicas:
            for max_batch in args.batches:
                rounds = {engine: [] for engine in engines}
                for _ in range(args.rounds):
                    for engine in engines:
                        serve.run(application(engine, path, replicas, max_batch, args.batch_wait_ms, timing_cache),
                                  name="bench", route_prefix="/")
                        rounds[engine].append(load(url, buffer.getvalue(), args.clients, args.warmup, args.seconds))
                        serve.delete("bench")
                figures = {engine: [statistics.median(values) for values in zip(*rounds[engine])] for engine in engines}
                ratios = [statistics.median(e[0] / o[0] for e, o in zip(rounds["estuary"], rounds[other]))
                          for other in others]
                batching = "off" if max_batch == 1 else f"up to {max_batch}"
                print(f"| {name} | {replicas} x {2 / replicas:g} | {batching} | " +
                      " | ".join(f"{rate:.1f}, {p50:.0f} / {p99:.0f}" for rate, p50, p99 in figures.values()) +
                      "".join(f" | {ratio:.2f}" for ratio in ratios) + " |", flush=True)
    serve.shutdown()
    ray.shutdown()


if __name__ == "__main__":
    main()
