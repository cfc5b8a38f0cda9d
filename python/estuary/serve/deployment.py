"""The Ray Serve deployment: one replica holds one Estuary model and answers HTTP requests
and DeploymentHandle calls, merging concurrent requests along the model's batch dim."""
import asyncio
import concurrent.futures
import math
import os
import shutil
import tempfile
import time

import ray
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import estuary

from . import codec
from .batching import Batcher
from .observability import ReplicaStats, logger
from .run_queue import RunQueue

# The first bytes of an offline model (ge_backend/include/estuary/ge/offline_model.h).
OFFLINE_MODEL_MAGIC = b"\x89EOM\r\n\x1a\n"
DEFAULT_MAX_BODY_BYTES = 64 << 20


def is_offline_model(path):
    try:
        with open(path, "rb") as file:
            return file.read(len(OFFLINE_MODEL_MAGIC)) == OFFLINE_MODEL_MAGIC
    except (IsADirectoryError, FileNotFoundError):
        return False


def replica_threads():
    """The CPUs Ray gave this replica, rounded up (a replica given half a CPU runs one thread)."""
    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    return max(1, math.ceil(cpus))


def tuning_options(tuning, timing_cache, tuning_budget_s):
    """The build options (estuary.Model's `options`) that make every plan the replica builds
    time its kernels, or none."""
    if not tuning:
        if timing_cache:
            raise ValueError("timing_cache is read and written only when the replica tunes (tuning=True)")
        return {}
    options = {"tune_kernels": "true", "tuning_budget": repr(float(tuning_budget_s))}
    if timing_cache:
        options["timing_cache"] = os.path.abspath(timing_cache)
    return options


def load_model(source, threads, input_shapes, options):
    """The model as an offline model mapped from disk: an .eom is mapped as it is; any other
    model is converted once, here, to an .eom in a temporary directory, mapped, and the file
    unlinked (the mapping keeps it alive). `options` apply to the plans built later (tuning).
    Returns the model and the seconds conversion took (None for an .eom)."""
    if is_offline_model(source):
        if input_shapes:
            raise ValueError(f"{source} is an offline model, whose input shapes were fixed when it was made; "
                             "input_shapes applies only to models converted at start")
        return estuary.Model(source, threads=threads, options=options), None
    started = time.perf_counter()
    directory = tempfile.mkdtemp(prefix="estuary-serve-")
    try:
        path = os.path.join(directory, "model.eom")
        estuary.convert(source, path, input_shapes=input_shapes or {}, threads=threads,
                        tune_kernels="tune_kernels" in options, timing_cache=options.get("timing_cache"),
                        tuning_budget=float(options.get("tuning_budget", 60.0)))
        converted = time.perf_counter() - started
        return estuary.Model(path, threads=threads, options=options), converted
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# Ray Serve restarts a replica whose constructor failed; a model that cannot be loaded fails
# the same way each time, so a few attempts are enough to tell a bad model from bad luck.
CONSTRUCTOR_RETRIES = 3


@serve.deployment(max_constructor_retry_count=CONSTRUCTOR_RETRIES)
class EstuaryModel:
    """A replica serving one model.

    model: an offline model (.eom), or any model file or directory Estuary's frontends read
        (converted once when the replica starts, with `input_shapes`).
    threads: the model's threads; by default the CPUs Ray gives the replica (num_cpus in
        ray_actor_options, rounded up).
    max_batch: the most rows (along the model's batch dim) one merged run holds; 1 turns
        batching off. A request larger than this runs alone.
    batch_wait_ms: when the model is free and the waiting requests hold fewer than max_batch
        rows, how long after the oldest arrived the run waits for more. Requests that
        arrived while the model was running have waited that long already: they go at once,
        merged.
    warm_dims: sizes of the model's other symbolic dims ({"seq": [16, 128]}) for which the
        plans of every padded batch size are built at start; plans for sizes not listed are
        built on first use.
    max_body_bytes: the largest request body (and the largest .npz once inflated).
    log_interval_s: how often the replica logs a summary line.
    tuning: each plan the replica builds times the kernels a node could run on this machine
        and keeps the fastest (as `estuary convert --tuning on` does), which makes start-up
        slower by up to `tuning_budget_s` seconds of measuring; off: the built-in rules choose.
    timing_cache: with tuning, a file on the replica's node that keeps the measurements: a
        replica that finds its problems there (a restart, another replica on the node) does
        not measure them again, and replicas on a node tune one plan at a time through the
        lock file `timing_cache + ".lock"`. application() makes a relative path absolute in
        the caller's directory.
    """

    def __init__(self, model, *, input_shapes=None, threads=None, max_batch=16, batch_wait_ms=5.0, warm_dims=None,
                 max_body_bytes=DEFAULT_MAX_BODY_BYTES, log_interval_s=60.0, tuning=False, timing_cache=None,
                 tuning_budget_s=60.0):
        context = serve.get_replica_context()
        self._name = os.path.basename(str(model).rstrip("/"))
        self._threads = threads or replica_threads()
        self._tuning = tuning_options(tuning, timing_cache, tuning_budget_s)
        self._model, convert_seconds = load_model(str(model), self._threads, input_shapes, self._tuning)
        self._batcher = Batcher(self._model.inputs, self._model.outputs, max_batch)
        self._max_body_bytes = max_body_bytes
        self._replica = context.replica_id.unique_id
        self._node = ray.get_runtime_context().get_node_id()
        # One model run at a time, each on all the replica's threads: runs side by side
        # would share the same cores and only add to every request's latency.
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="estuary-run")
        self._queue = RunQueue(self._run_merged, self._batcher.max_batch, batch_wait_ms / 1e3)
        self._stats = ReplicaStats(self._name)

        started = time.perf_counter()
        feeds, why_not = self._batcher.warmup_feeds(warm_dims or {})
        for feed in feeds:
            self._model.run(feed)
        batching = (f"merging requests along '{self._batcher.symbol}' into runs of "
                    f"{', '.join(map(str, self._batcher.sizes))} rows" if self._batcher.enabled else
                    f"not merging requests ({self._batcher.reason or 'max_batch is 1'})")
        plans = (f"{len(feeds)} plans built in {time.perf_counter() - started:.2f} s" if feeds else
                 f"plans built on first use: {why_not}")
        origin = "an offline model" if convert_seconds is None else f"converted in {convert_seconds:.2f} s"
        kernels = ("kernels tuned" + (f" (timing cache {self._tuning['timing_cache']})"
                                      if "timing_cache" in self._tuning else "")
                   if self._tuning else "kernels chosen by the built-in rules")
        logger.info("estuary.serve %s: %s, mapped with %d thread%s; %s; %s, %s", self._name, origin, self._threads,
                    "s" if self._threads > 1 else "", batching, plans, kernels)
        self._stats.log_every(log_interval_s, f"estuary.serve {self._name}")

    def describe(self):
        """The model's inputs and outputs and how this replica serves them (GET /)."""
        return {
            "model": self._name,
            "inputs": self._model.inputs,
            "outputs": self._model.outputs,
            "batch": {"dim": self._batcher.symbol, "sizes": self._batcher.sizes} if self._batcher.enabled else None,
            "threads": self._threads,
            "tuning": bool(self._tuning),
            "replica": self._replica,
            "node": self._node,
            "pid": os.getpid(),
        }

    async def infer(self, inputs):
        """{name: array} in, {name: array} out: for applications that call this deployment
        through a DeploymentHandle. Bad inputs raise estuary.InputTypeError or InputValueError."""
        return await self._serve(inputs)

    async def __call__(self, request: Request):
        if request.method == "GET":
            return JSONResponse(self.describe(), headers=self._headers())
        if request.method != "POST":
            return self._refuse(f"{request.method} is not served: POST inputs, or GET the model's description",
                                status=405)
        try:
            kind = codec.media_type(request.headers.get("content-type"))
            body = await self._read_body(request)
            feeds = codec.decode(body, kind, self._model.inputs, self._max_body_bytes)
        except codec.BadRequest as error:
            self._stats.arrived()
            self._stats.answered(0.0, "refused")
            return self._refuse(str(error))
        try:
            outputs = await self._serve(feeds)
        except (estuary.InputTypeError, estuary.InputValueError) as error:
            return self._refuse(str(error))
        return Response(codec.encode(outputs, kind), media_type=kind, headers=self._headers())

    def _headers(self):
        # Which replica answered: for logs and clients tracing a request across a cluster.
        return {"X-Estuary-Replica": self._replica}

    def _refuse(self, message, status=400):
        return JSONResponse({"error": message}, status_code=status, headers=self._headers())

    async def _read_body(self, request):
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self._max_body_bytes:
            raise codec.BadRequest(f"the body is {declared} bytes, more than the limit of {self._max_body_bytes}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self._max_body_bytes:
                raise codec.BadRequest(f"the body is more than the limit of {self._max_body_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def _serve(self, feeds):
        started = time.perf_counter()
        self._stats.arrived()
        status = "failed"
        try:
            pending = self._batcher.pending(feeds)
            if pending is None:
                loop = asyncio.get_running_loop()
                outputs = await loop.run_in_executor(self._executor, self._run_alone, feeds)
            else:
                outputs = await self._queue.submit(pending, pending.rows)
            status = "ok"
            return outputs
        except (estuary.InputTypeError, estuary.InputValueError):
            status = "refused"
            raise
        finally:
            self._stats.answered(time.perf_counter() - started, status)

    async def _run_merged(self, batch):
        # The list holds each request's outputs or the exception it gets: one request's bad
        # input must not fail the others merged with it.
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._run_groups, batch)

    def _run_alone(self, feeds):
        outputs = self._model.run(feeds)
        first = next(iter(feeds.values()), None)
        rows = len(first) if getattr(first, "ndim", 0) else 1
        self._stats.ran(rows, rows)
        return dict(zip(self._batcher.output_names, outputs))

    def _run_groups(self, batch):
        """Runs a batch of Pending requests, one run per group of equal other dims; returns
        each request's outputs or exception, in the batch's order."""
        groups = {}
        for index, pending in enumerate(batch):
            groups.setdefault(pending.key, []).append(index)
        results = [None] * len(batch)
        for indices in groups.values():
            group = [batch[index] for index in indices]
            for index, result in zip(indices, self._run_group(group)):
                results[index] = result
        return results

    def _run_group(self, group):
        rows = sum(pending.rows for pending in group)
        try:
            outputs = self._model.run(self._batcher.merge(group))
        except (estuary.InputTypeError, estuary.InputValueError) as error:
            if len(group) == 1:
                return [error]
            # Something only the model checks (a dim's range) refused the merged run: run
            # each request alone, so that each gets its own answer or its own error.
            return [self._outcome(self._run_alone, pending.feeds) for pending in group]
        except Exception as error:  # noqa: BLE001 - every request of the run gets the failure
            return [error] * len(group)
        self._stats.ran(rows, self._batcher.size_for(rows))
        return self._batcher.split(outputs, group)

    @staticmethod
    def _outcome(run, feeds):
        try:
            return run(feeds)
        except Exception as error:  # noqa: BLE001 - handed back as this request's answer
            return error


def application(model, *, replicas=1, replica_cpus=1.0, max_replicas_per_node=None, max_ongoing_requests=None,
                version=None, **model_options):
    """A Ray Serve application serving `model` (see EstuaryModel for `model_options`), to
    pass to serve.run or compose with others:

        serve.run(estuary.serve.application("resnet50.eom", replicas=2, max_batch=16))

    replicas: how many replicas; replica_cpus: the CPUs Ray reserves for each (and by default
    its thread count); max_replicas_per_node: at most this many on one node (1 puts each
    replica on a node of its own); max_ongoing_requests: requests a replica takes at once,
    by default twice max_batch, so that the next batch fills while one runs; version: a
    string naming this configuration, so that deploying it again (with only another route)
    keeps the running replicas instead of replacing them."""
    max_batch = model_options.get("max_batch", 16)
    # Checked here rather than in each replica, whose failures Ray only retries and logs.
    if replicas < 1 or max_batch < 1:
        raise ValueError(f"replicas and max_batch must be at least 1, got {replicas} and {max_batch}")
    tuning_options(model_options.get("tuning", False), model_options.get("timing_cache"),
                   model_options.get("tuning_budget_s", 60.0))
    if model_options.get("timing_cache"):
        # Relative to this process's directory, not to a replica's (Ray starts workers elsewhere).
        model_options["timing_cache"] = os.path.abspath(model_options["timing_cache"])
    options = {
        "num_replicas": replicas,
        "ray_actor_options": {"num_cpus": replica_cpus},
        "max_ongoing_requests": max_ongoing_requests or max(8, 2 * max_batch),
    }
    if max_replicas_per_node:
        options["max_replicas_per_node"] = max_replicas_per_node
    if version:
        # Ray Serve 2.x removed `version` from its public options but still honours it
        # internally; without it each serve.run gives the deployment a random version and
        # replaces every replica.
        options.update(version=version, _internal=True)
    return EstuaryModel.options(**options).bind(model, **model_options)
