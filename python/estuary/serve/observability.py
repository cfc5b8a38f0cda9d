"""What a replica reports: Ray Serve metrics (exported with Serve's own, tagged with the
application, deployment and replica) and one summary line per interval in its log."""
import logging
import threading
import time

import numpy as np
from ray.serve import metrics

logger = logging.getLogger("ray.serve")

LATENCY_BOUNDARIES_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]
ROWS_BOUNDARIES = [1, 2, 4, 8, 16, 32, 64, 128, 256]


class ReplicaStats:
    """Counts requests and runs, both into Ray Serve metrics and into a window that
    `summary()` reports and empties. Called from the replica's event loop and from the
    thread that runs the model, hence the lock."""

    def __init__(self, model_name):
        self._latency = metrics.Histogram(
            "estuary_request_latency_ms", description="Time from a request's arrival at the replica to its answer.",
            boundaries=LATENCY_BOUNDARIES_MS, tag_keys=("model",))
        self._rows = metrics.Histogram(
            "estuary_batch_rows", description="Rows of real requests in each model run (before padding).",
            boundaries=ROWS_BOUNDARIES, tag_keys=("model",))
        self._waiting = metrics.Gauge(
            "estuary_requests_waiting", description="Requests at the replica that have not been answered yet.",
            tag_keys=("model",))
        self._requests = metrics.Counter(
            "estuary_requests", description="Requests answered, by status: ok, refused (HTTP 400), failed.",
            tag_keys=("model", "status"))
        for metric in (self._latency, self._rows, self._waiting, self._requests):
            metric.set_default_tags({"model": model_name})  # a dict each: Serve adds its own tags to it
        self._lock = threading.Lock()
        self._in_flight = 0
        self._clear()

    def _clear(self):
        self._started = time.monotonic()
        self._latencies_ms = []
        self._statuses = {"ok": 0, "refused": 0, "failed": 0}
        self._runs = self._run_rows = self._padded_rows = 0

    def arrived(self):
        with self._lock:
            self._in_flight += 1
            self._waiting.set(self._in_flight)

    def answered(self, seconds, status):
        milliseconds = seconds * 1e3
        with self._lock:
            self._in_flight -= 1
            self._waiting.set(self._in_flight)
            self._latencies_ms.append(milliseconds)
            self._statuses[status] += 1
        self._latency.observe(milliseconds)
        self._requests.inc(tags={"status": status})

    def ran(self, rows, padded_rows):
        with self._lock:
            self._runs += 1
            self._run_rows += rows
            self._padded_rows += padded_rows
        self._rows.observe(rows)

    def summary(self):
        """The window's figures as one line, and the window emptied."""
        with self._lock:
            seconds = time.monotonic() - self._started
            latencies, statuses = self._latencies_ms, self._statuses
            runs, rows, padded, waiting = self._runs, self._run_rows, self._padded_rows, self._in_flight
            self._clear()
        line = (f"last {seconds:.0f} s: {sum(statuses.values())} requests ({statuses['refused']} refused, "
                f"{statuses['failed']} failed), {runs} runs")
        if runs:
            line += f" of {rows / runs:.1f} rows on average ({100 * (padded - rows) / max(padded, 1):.0f}% padding)"
        if latencies:
            p50, p99 = np.percentile(latencies, [50, 99])
            line += f", latency p50 {p50:.1f} ms p99 {p99:.1f} ms"
        return line + f", {waiting} waiting"

    def log_every(self, seconds, prefix):
        """Logs summary() every `seconds` from a daemon thread, for the replica's lifetime."""
        def loop():
            while True:
                time.sleep(seconds)
                logger.info("%s: %s", prefix, self.summary())

        threading.Thread(target=loop, name="estuary-serve-log", daemon=True).start()
