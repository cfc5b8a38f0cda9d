"""estuary.serve on a Ray cluster of two nodes on this machine: a CNN and a transformer
encoder, each served by two replicas on different nodes; 32 concurrent clients whose every
answer must equal a direct estuary.Model run; a replica killed in the middle; bad requests.

Runs in .venvs/ray (python/envs/ray.txt). The models are exported by PyTorch in its own
environment (serve_models.py) and cached between runs.
"""
import asyncio
import collections
import io
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile

import numpy as np
import pytest
import requests

import environments
import estuary

# The proxy of this one-machine "cluster" lives on the head node; preferring replicas on its
# own node would send the head's replicas everything while the other node idles.
os.environ["RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING"] = "0"

import ray  # noqa: E402
from ray import serve  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

import estuary.serve  # noqa: E402
from estuary.serve.batching import Batcher, bucket_sizes  # noqa: E402
from estuary.serve.run_queue import RunQueue  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
CNN_MAX_BODY = 1 << 20
CLIENTS, REQUESTS, KILL_AFTER = 32, 2000, 700
# A request may be merged with others into a larger run, which sums in another order.
RTOL, ATOL = 1e-5, 1e-5


@pytest.fixture(scope="module")
def models():
    directory = environments.made("torch", HERE / "serve_models.py", key_files=[HERE / "torch_models.py"])
    return {"cnn": str(directory / "cnn.onnx"), "encoder": str(directory / "encoder.onnx")}


@pytest.fixture(scope="module")
def references(models):
    """The models run directly in this process: what every served answer must equal."""
    return {name: estuary.Model(path, threads=1) for name, path in models.items()}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(models):
    """Two Ray nodes of one CPU each, Serve's proxy on the head, and both models served by
    two replicas, one per node. Yields the base URL and the cluster."""
    store = 100 << 20  # small: /dev/shm is shared with the rest of the machine
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": store,
                                                          "include_dashboard": False})
    nodes.add_node(num_cpus=1, object_store_memory=store)
    nodes.wait_for_nodes()
    ray.init(address=nodes.address)
    port = free_port()
    serve.start(proxy_location="HeadOnly", http_options={"host": "127.0.0.1", "port": port},
                logging_config={"enable_access_log": False})
    # 0.4 CPUs a replica: two per node, and room left for the command-line test's replica.
    common = dict(replicas=2, replica_cpus=0.4, max_replicas_per_node=1, max_batch=8, batch_wait_ms=2,
                  log_interval_s=2)
    serve.run(estuary.serve.application(models["cnn"], max_body_bytes=CNN_MAX_BODY, **common), name="cnn",
              route_prefix="/cnn")
    serve.run(estuary.serve.application(models["encoder"], warm_dims={"seq": [8, 16]}, **common), name="encoder",
              route_prefix="/encoder")
    yield f"http://127.0.0.1:{port}", nodes
    serve.shutdown()
    ray.shutdown()
    nodes.shutdown()


def replicas_of(url, count=2, seconds=120):
    """{replica id: GET's description} for `count` replicas of the application at `url`.

    Ray Serve sends a request to the less busy of two replicas it asks; a replica that does not
    answer that question within 0.1 s (a loaded machine) is passed over, once 200 times in a row
    in CI. So this keeps asking for up to `seconds`, with a pause between requests."""
    seen = {}
    tries = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        description = requests.get(url, timeout=30).json()
        tries += 1
        seen[description["replica"]] = description
        if len(seen) == count:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"{url}: {count} replicas expected, {len(seen)} answered {tries} requests in {seconds} s")


def npz_bytes(**arrays):
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def request_inputs(index):
    """The model, inputs and body form of request `index`: CNN and encoder alternate, with
    batch sizes 1 to 5 (CNN; and now and then 12, past max_batch, which runs alone) and 1 to
    3 at sequence lengths 8, 16 and 12 (whose plans are not built at start), half as JSON and
    half as .npz."""
    rng = np.random.default_rng(index)
    form = "json" if index % 4 < 2 else "npz"
    if index % 2 == 0:
        rows = 12 if index % 50 == 0 else 1 + index // 2 % 5
        return "cnn", {"x": rng.standard_normal((rows, 3, 32, 32)).astype(np.float32)}, form
    rows, seq = 1 + index // 2 % 3, (8, 16, 12)[index // 6 % 3]
    mask = np.ones((rows, seq), np.float32)
    mask[:, seq - 1 - index % 3:] = 0
    return "encoder", {"ids": rng.integers(0, 100, (rows, seq)), "mask": mask}, form


def post(session, url, inputs, form, timeout=60):
    if form == "json":
        return session.post(url, json={"inputs": {name: array.tolist() for name, array in inputs.items()}},
                            timeout=timeout)
    return session.post(url, data=npz_bytes(**inputs), headers={"Content-Type": "application/octet-stream"},
                        timeout=timeout)


def outputs_of(response, form):
    if form == "json":
        return {name: np.asarray(value, np.float32) for name, value in response.json()["outputs"].items()}
    with np.load(io.BytesIO(response.content)) as arrays:
        return dict(arrays)


def post_with_retries(session, url, inputs, form, attempts=20):
    """What Ray Serve's guide asks of clients: a request that fails on the server's side (5xx,
    or a dropped connection when a replica dies under it) is sent again. Returns the response
    and what each failed attempt got (a status code, or "connection")."""
    failures = []
    for _ in range(attempts):
        try:
            response = post(session, url, inputs, form)
        except requests.ConnectionError:
            failures.append("connection")
            time.sleep(0.2)
            continue
        if response.status_code < 500:
            return response, failures
        failures.append(response.status_code)
        time.sleep(0.2)
    raise AssertionError(f"{url}: no answer after {attempts} attempts: {failures}")


def test_batcher_merges_along_the_batch_dim_only():
    inputs = [{"name": "ids", "dtype": "i64", "shape": ["batch", "seq"], "mutable": False},
              {"name": "mask", "dtype": "f32", "shape": ["batch", "seq"], "mutable": False}]
    outputs = [{"name": "hidden", "dtype": "f32", "shape": ["batch", "seq", 4], "mutable": False}]
    assert bucket_sizes(1) == [1] and bucket_sizes(8) == list(range(1, 9))
    assert bucket_sizes(17) == list(range(1, 9)) + [10, 12, 14, 16, 17]
    assert bucket_sizes(64)[-9:] == [16, 20, 24, 28, 32, 40, 48, 56, 64]
    batcher = Batcher(inputs, outputs, max_batch=12)
    assert batcher.symbol == "batch" and batcher.sizes == list(range(1, 9)) + [10, 12]

    def request(rows, seq, ids_dtype=np.int64):
        ids = np.arange(rows * seq, dtype=ids_dtype).reshape(rows, seq)
        return {"ids": ids, "mask": np.ones((rows, seq), np.float32)}

    a, b, c = batcher.pending(request(6, 5)), batcher.pending(request(3, 5)), batcher.pending(request(1, 7))
    assert (a.rows, b.rows) == (6, 3) and a.key == b.key != c.key
    # Not mergeable: a wrong dtype, a missing input, rows past max_batch, batch sizes that disagree.
    assert batcher.pending(request(1, 5, np.int32)) is None
    assert batcher.pending({"ids": request(1, 5)["ids"]}) is None
    assert batcher.pending(request(13, 5)) is None
    assert batcher.pending({"ids": np.zeros((2, 5), np.int64), "mask": np.zeros((3, 5), np.float32)}) is None
    assert batcher.merge([a])["ids"].shape == (6, 5)  # a size with a plan: no padding
    merged = batcher.merge([a, b])
    assert merged["ids"].shape == (10, 5)  # 9 rows padded to 10 with the last row again
    np.testing.assert_array_equal(merged["ids"][9], merged["ids"][8])
    hidden = np.arange(10 * 5 * 4, dtype=np.float32).reshape(10, 5, 4)
    first, second = batcher.split([hidden], [a, b])
    np.testing.assert_array_equal(first["hidden"], hidden[:6])
    np.testing.assert_array_equal(second["hidden"], hidden[6:9])
    feeds, why_not = batcher.warmup_feeds({})
    assert feeds == [] and "seq" in why_not
    feeds, _ = batcher.warmup_feeds({"seq": [5, 7]})
    shapes = sorted(feed["mask"].shape for feed in feeds)
    assert shapes == sorted((rows, seq) for rows in batcher.sizes for seq in (5, 7))

    stateful = Batcher([dict(inputs[0], mutable=True), inputs[1]], outputs, max_batch=8)
    assert not stateful.enabled and "updated in place" in stateful.reason
    static = Batcher([{"name": "x", "dtype": "f32", "shape": [1, 3], "mutable": False}], outputs, max_batch=8)
    assert not static.enabled and "symbolic" in static.reason


def test_run_queue_merges_what_waited_while_the_model_ran():
    async def scenario():
        calls, model_free = [], asyncio.Event()

        async def run_batch(items):
            calls.append(items)
            if len(calls) == 1:
                await model_free.wait()
            return [ValueError(f"bad {item}") if item == "bad" else item.upper() for item in items]

        async def until(condition):
            for _ in range(500):
                if condition():
                    return
                await asyncio.sleep(0.01)
            raise AssertionError("not within 5 s")

        queue = RunQueue(run_batch, max_rows=8, wait_s=0.001)
        first = asyncio.ensure_future(queue.submit("a", 1))
        await until(lambda: calls)  # "a" runs alone: nothing else came within wait_s
        assert calls == [["a"]]
        later = [asyncio.ensure_future(queue.submit(item, rows))
                 for item, rows in [("b", 3), ("gone", 1), ("bad", 1), ("c", 3), ("d", 2)]]
        await asyncio.sleep(0.05)
        later[1].cancel()  # its client went away while it waited
        await asyncio.sleep(0)
        model_free.set()
        assert await first == "A"
        assert await later[0] == "B" and await later[3] == "C" and await later[4] == "D"
        with pytest.raises(ValueError, match="bad bad"):
            await later[2]
        # Everything that waited went into the next run, in order, up to 8 rows, with the
        # cancelled request left out: "d" would have made 9 rows.
        assert calls[1:] == [["b", "bad", "c"], ["d"]]

        # A model that is free waits wait_s for more, unless max_rows are there already.
        # (wait_s is long so that a loaded machine's pauses cannot reach it.)
        slow = RunQueue(run_batch, max_rows=4, wait_s=2.0)
        calls.clear()
        started = time.perf_counter()
        assert await asyncio.gather(slow.submit("e", 2), slow.submit("f", 2)) == ["E", "F"]
        assert calls == [["e", "f"]] and time.perf_counter() - started < 1.0
        started = time.perf_counter()
        alone = asyncio.ensure_future(slow.submit("g", 1))
        await asyncio.sleep(0.1)
        assert not alone.done()
        assert await alone == "G" and time.perf_counter() - started >= 2.0

        async def broken(items):
            raise RuntimeError("the run failed")

        failing = RunQueue(broken, max_rows=4, wait_s=0)
        for outcome in await asyncio.gather(failing.submit("h", 1), failing.submit("i", 1), return_exceptions=True):
            assert isinstance(outcome, RuntimeError)

    asyncio.run(scenario())


def test_replicas_run_on_both_nodes(cluster):
    url, _ = cluster
    for app in ("cnn", "encoder"):
        replicas = replicas_of(f"{url}/{app}")
        assert len({description["node"] for description in replicas.values()}) == 2, replicas
        description = next(iter(replicas.values()))
        assert description["batch"] == {"dim": "batch", "sizes": list(range(1, 9))}
        assert description["threads"] == 1  # 0.4 CPUs, rounded up


def test_concurrent_clients_get_direct_results_through_a_replica_failure(cluster, references):
    """2,000 requests from 32 clients; after 700, one CNN replica's process is killed. Every
    request gets an answer equal to a direct run (after retries, for those the dead replica
    held), and the replica comes back."""
    url, nodes = cluster
    before = replicas_of(f"{url}/cnn")
    victim = next(iter(before.values()))
    lock, done, failures, answered_by, retried = threading.Lock(), [0], [], set(), []
    indices = iter(range(REQUESTS))

    def client():
        with requests.Session() as session:
            while True:
                with lock:
                    index = next(indices, None)
                if index is None:
                    return
                app, inputs, form = request_inputs(index)
                try:
                    response, failed = post_with_retries(session, f"{url}/{app}", inputs, form)
                    assert response.status_code == 200, response.text
                    got = outputs_of(response, form)
                    want = references[app].run(inputs)
                    name = references[app].outputs[0]["name"]
                    np.testing.assert_allclose(got[name], want[0], rtol=RTOL, atol=ATOL,
                                               err_msg=f"request {index} ({app}, {form})")
                except AssertionError as error:
                    failures.append(error)
                    continue
                with lock:
                    done[0] += 1
                    retried.extend(failed)
                    answered_by.add(response.headers["X-Estuary-Replica"])

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    while done[0] < KILL_AFTER and any(thread.is_alive() for thread in threads):
        time.sleep(0.05)
    os.kill(victim["pid"], signal.SIGKILL)
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    assert not failures, f"{len(failures)} requests failed; the first: {failures[0]}"
    assert done[0] == REQUESTS
    assert set(before) <= answered_by  # both CNN replicas served
    print(f"{REQUESTS} requests in {seconds:.1f} s ({REQUESTS / seconds:.0f}/s); attempts that failed when the replica "
          f"was killed: {collections.Counter(retried)}")

    # The killed replica is replaced, and the new one serves.
    deadline = time.monotonic() + 60
    states = None
    while time.monotonic() < deadline:
        states = serve.status().applications["cnn"].deployments["EstuaryModel"].replica_states
        if states == {"RUNNING": 2}:
            break
        time.sleep(0.5)
    assert states == {"RUNNING": 2}, f"the killed replica was not replaced within 60 s: {states}"
    after = replicas_of(f"{url}/cnn")
    assert victim["replica"] not in after and len(after) == 2

    # Requests were merged: the replicas' summary lines report runs of more than one row.
    logs = pathlib.Path(nodes.head_node.get_logs_dir_path()) / "serve"
    summary = re.compile(r"estuary.serve cnn.onnx: last \d+ s: .* runs of ([\d.]+) rows")
    averages = [float(match) for path in logs.glob("replica_cnn_*.log") for match in summary.findall(path.read_text())]
    assert averages and max(averages) > 1.5, averages


def test_replicas_export_their_metrics(cluster):
    """The replicas' metrics reach Ray's Prometheus endpoints (one per node), with Serve's tags."""
    url, _ = cluster
    with requests.Session() as session:
        for index in range(0, 40, 2):
            assert post(session, f"{url}/cnn", *request_inputs(index)[1:]).status_code == 200
    wanted = {"estuary_request_latency_ms", "estuary_batch_rows", "estuary_requests_waiting", "estuary_requests"}
    ports = [node["MetricsExportPort"] for node in ray.nodes() if node["Alive"]]
    found, deadline = set(), time.monotonic() + 60  # Ray exports every few seconds
    while found != wanted and time.monotonic() < deadline:
        for port in ports:
            text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
            found |= {name for name in wanted for line in text.splitlines()
                      if line.startswith(f"ray_{name}") and 'application="cnn"' in line and 'replica="' in line}
        time.sleep(1)
    assert found == wanted, (ports, found)


def bad_requests(references):
    """(description, form, body, content type, the message the answer must hold)."""
    cnn = references["cnn"]

    def estuary_says(inputs):
        with pytest.raises((estuary.InputTypeError, estuary.InputValueError)) as raised:
            cnn.run(inputs)
        return str(raised.value)

    wrong_shape = {"x": np.zeros((1, 3, 31, 32), np.float32)}
    wrong_rank = {"x": np.zeros((3, 32, 32), np.float32)}
    wrong_dtype = {"x": np.zeros((1, 3, 32, 32), np.float64)}
    wrong_name = {"image": np.zeros((1, 3, 32, 32), np.float32)}
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", bytes(8 * CNN_MAX_BODY))  # 8 MiB of zeros deflate to a few KiB
    json_body = lambda inputs: json.dumps({"inputs": {k: v.tolist() for k, v in inputs.items()}})  # noqa: E731
    npz = "application/octet-stream"
    return [
        ("wrong shape", json_body(wrong_shape), "application/json", estuary_says(wrong_shape)),
        ("wrong rank", npz_bytes(**wrong_rank), npz, estuary_says(wrong_rank)),
        ("wrong dtype", npz_bytes(**wrong_dtype), npz, estuary_says(wrong_dtype)),
        ("wrong name", npz_bytes(**wrong_name), npz, estuary_says(wrong_name)),
        ("booleans for floats", json.dumps({"inputs": {"x": np.ones((1, 3, 32, 32), bool).tolist()}}),
         "application/json", "input 'x': expected dtype f32, got bool"),
        ("undecodable JSON", b'{"inputs": {"x": [1, 2', "application/json", "the body is not valid JSON"),
        ("undecodable .npz", b"PK\x03\x04 not really", npz, "the body is not a readable .npz archive"),
        ("body over the limit", bytes(CNN_MAX_BODY + 1), npz, f"more than the limit of {CNN_MAX_BODY}"),
        (".npz expanding over the limit", bomb.getvalue(), npz, "expands to 8388608 bytes"),
        ("other content type", b"x=1", "text/plain", "Content-Type must be application/json"),
    ]


def test_bad_requests_get_400_and_leave_others_served(cluster, references):
    url, _ = cluster
    stop, good, errors = threading.Event(), [0], []

    def steady_client():
        with requests.Session() as session:
            index = 0
            while not stop.is_set():
                app, inputs, form = request_inputs(index)
                response = post(session, f"{url}/{app}", inputs, form)
                if response.status_code != 200:
                    errors.append(response.text)
                else:
                    good[0] += 1
                index += 1

    steady = [threading.Thread(target=steady_client) for _ in range(4)]
    for thread in steady:
        thread.start()
    try:
        with requests.Session() as session:
            for description, body, content_type, message in bad_requests(references) * 3:
                response = session.post(f"{url}/cnn", data=body, headers={"Content-Type": content_type}, timeout=60)
                assert response.status_code == 400, f"{description}: {response.status_code} {response.text}"
                assert message in response.json()["error"], f"{description}: {response.json()['error']}"
    finally:
        stop.set()
        for thread in steady:
            thread.join()
    assert not errors and good[0] > 0, errors[:3]


def test_handle_calls_return_arrays_and_raise_input_errors(cluster, references):
    handle = serve.get_app_handle("encoder")
    app, inputs, _ = request_inputs(3)
    outputs = handle.infer.remote(inputs).result()
    np.testing.assert_allclose(outputs["hidden"], references[app].run(inputs)[0], rtol=RTOL, atol=ATOL)
    with pytest.raises(estuary.InputValueError, match="input 'mask'"):
        handle.infer.remote({"ids": inputs["ids"], "mask": inputs["mask"][:, :-1]}).result()


def test_estuary_serve_command_joins_the_cluster_and_routes_only_ready_replicas(cluster, models, references, tmp_path):
    """`estuary serve` (the C++ command, which runs python -m estuary.serve) joins the
    cluster; its route appears only once its replica is running, it answers, and SIGTERM
    removes it. Its replica, started by the cluster's node elsewhere, tunes into the timing
    cache given relative to the command's directory."""
    url, nodes = cluster
    port = url.rsplit(":", 1)[1]
    command = [os.environ.get("ESTUARY_CLI", "estuary"), "serve", models["cnn"], "--address", nodes.address,
               "--port", port, "--name", "cli", "--route-prefix", "/cli", "--replica-cpus", "0.1",
               "--tuning", "on", "--timing-cache", "cli.cache", "--tuning-budget", "5"]
    log = tmp_path / "serve.log"
    with open(log, "w") as output:
        server = subprocess.Popen(command, env=dict(os.environ, ESTUARY_PYTHON=sys.executable), stdout=output,
                                  stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while "/cli" not in requests.get(f"{url}/-/routes", timeout=10).json():
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"the command's route never appeared:\n{log.read_text()}"
            time.sleep(0.1)
        # Adding the route is an in-place update: the application may say DEPLOYING and its
        # replica UPDATING (running, being reconfigured), but never STARTING.
        replicas = serve.status().applications["cli"].deployments["EstuaryModel"].replica_states
        assert sum(replicas.values()) == 1 and set(replicas) <= {"RUNNING", "UPDATING"}, replicas
        _, inputs, _ = request_inputs(4)
        response = post(requests, f"{url}/cli", inputs, "npz")
        assert response.status_code == 200, response.text
        np.testing.assert_allclose(outputs_of(response, "npz")["logits"], references["cnn"].run(inputs)[0],
                                   rtol=RTOL, atol=ATOL)
        assert (tmp_path / "cli.cache").read_text().startswith("# estuary timing cache 1\n")
        while "is served at" not in log.read_text():
            assert time.monotonic() < deadline, f"the command never said it serves:\n{log.read_text()}"
            time.sleep(0.1)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert server.returncode == 0, log.read_text()
    assert "/cli" not in requests.get(f"{url}/-/routes", timeout=10).json()


def test_serve_module_on_its_own_cluster_is_healthy_only_when_ready(models, references, tmp_path):
    """python -m estuary.serve without --address starts a Ray cluster of its own: /-/healthz
    says 503 until the replica is ready and 200 from then on, when the model (an offline
    model this time, mapped as it is) answers. The replica tunes the plans it builds at start
    and keeps the measurements in the timing cache, given relative to the command's directory."""
    port = free_port()
    log = tmp_path / "serve.log"
    offline = tmp_path / "encoder.eom"
    estuary.convert(models["encoder"], str(offline))
    command = [sys.executable, "-m", "estuary.serve", str(offline), "--port", str(port), "--replica-cpus", "0.5",
               "--max-batch", "4", "--warm-dims", "seq:8", "--object-store-memory", "80MiB",
               "--tuning", "on", "--timing-cache", "timing.cache", "--tuning-budget", "20"]
    with open(log, "w") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=tmp_path)
    answers = []
    try:
        deadline = time.monotonic() + 120
        while not answers or answers[-1] != 200:
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            try:
                answers.append(requests.get(f"http://127.0.0.1:{port}/-/healthz", timeout=10).status_code)
            except requests.ConnectionError:
                pass  # the proxy is not listening yet
            time.sleep(0.1)
        _, inputs, _ = request_inputs(1)
        response = post(requests, f"http://127.0.0.1:{port}/", inputs, "json", timeout=10)
        assert response.status_code == 200, response.text
        np.testing.assert_allclose(outputs_of(response, "json")["hidden"], references["encoder"].run(inputs)[0],
                                   rtol=RTOL, atol=ATOL)
        assert requests.get(f"http://127.0.0.1:{port}/", timeout=10).json()["tuning"] is True
        cache = (tmp_path / "timing.cache").read_text().splitlines()
        assert cache[0] == "# estuary timing cache 1" and len(cache) > 1, cache  # one line per problem measured
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert set(answers[:-1]) == {503}, answers  # not ready while the replica started
    assert server.returncode == 0, log.read_text()


def test_estuary_serve_command_says_what_is_missing(tmp_path, models):
    cli = os.environ.get("ESTUARY_CLI", "estuary")
    without_ray = environments.ROOT / ".venv" / "bin" / "python"
    done = subprocess.run([cli, "serve", models["cnn"]], env=dict(os.environ, ESTUARY_PYTHON=str(without_ray)),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "ray" in done.stderr.lower() and str(without_ray) in done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-m", "estuary.serve", str(tmp_path / "missing.onnx")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "missing.onnx: no such file or directory" in done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-m", "estuary.serve", models["cnn"], "--timing-cache", "t.cache"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--timing-cache is read and written only with --tuning on" in done.stderr, \
        done.stderr
