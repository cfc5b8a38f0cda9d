"""The queue in front of a replica's model: requests wait there while the model runs, and
the next run takes as many of them as fit.

Ray Serve's @serve.batch (2.60) is not used for this. Since it learned to run batches
concurrently, it closes a batch `batch_wait_timeout_s` after the batch's first request,
whether or not the model is free, and the batch then waits for the model. Under load a
replica's runs so held one or two requests while the others queued behind them: 1.3 rows
on average with 8 requests waiting (bench/README.md, "Serving: runs formed when the model is
free"). Here, as in Triton's dynamic batcher, a run is formed when the model is free to
start it, from every request that waited meanwhile. This module knows nothing about Ray or HTTP.
"""
import asyncio
import collections


class _Waiting:
    __slots__ = ("item", "rows", "future", "arrived")

    def __init__(self, item, rows, future, arrived):
        self.item, self.rows, self.future, self.arrived = item, rows, future, arrived


class RunQueue:
    """Hands waiting items to `run_batch`, one call at a time.

    run_batch: an async function taking a list of items and returning one result per item,
        in order; a result that is an exception is raised to that item's caller.
    max_rows: the most rows one call takes (an item's rows are given to `submit`); a call
        takes items in order of arrival while they fit.
    wait_s: when the model is free but the waiting items hold fewer than max_rows rows, how
        long after the oldest one arrived the call waits for more. Items that arrived while
        a run was going on have usually waited that long already, and go at once.
    """

    def __init__(self, run_batch, max_rows, wait_s):
        if max_rows < 1 or wait_s < 0:
            raise ValueError(f"max_rows must be at least 1 and wait_s at least 0, got {max_rows} and {wait_s}")
        self._run_batch = run_batch
        self._max_rows = max_rows
        self._wait_s = wait_s
        self._waiting = collections.deque()
        self._arrived = None  # an asyncio.Event, made on the loop the queue first runs on
        self._worker = None

    async def submit(self, item, rows):
        """The result of `item`'s run, once a call of run_batch has taken it."""
        loop = asyncio.get_running_loop()
        if self._worker is None:
            self._arrived = asyncio.Event()
            self._worker = loop.create_task(self._take_and_run())
        waiting = _Waiting(item, rows, loop.create_future(), loop.time())
        self._waiting.append(waiting)
        self._arrived.set()
        result = await waiting.future
        if isinstance(result, BaseException):
            raise result
        return result

    async def _take_and_run(self):
        loop = asyncio.get_running_loop()
        while True:
            await self._next_batch_ready(loop)
            batch = self._take()
            if not batch:
                continue
            try:
                results = await self._run_batch([waiting.item for waiting in batch])
            except Exception as error:  # noqa: BLE001 - every item of the call gets the failure
                results = [error] * len(batch)
            for waiting, result in zip(batch, results):
                if not waiting.future.done():
                    waiting.future.set_result(result)

    async def _next_batch_ready(self, loop):
        """Returns once items wait and either they fill a run or the oldest has waited wait_s."""
        while True:
            self._drop_cancelled()
            if not self._waiting:
                self._arrived.clear()
                await self._arrived.wait()
                continue
            if sum(waiting.rows for waiting in self._waiting if not waiting.future.done()) >= self._max_rows:
                return
            left = self._waiting[0].arrived + self._wait_s - loop.time()
            if left <= 0:
                return
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), left)
            except asyncio.TimeoutError:
                return

    def _take(self):
        batch, rows = [], 0
        while self._waiting:
            waiting = self._waiting[0]
            if waiting.future.done():  # cancelled: its client went away
                self._waiting.popleft()
                continue
            if batch and rows + waiting.rows > self._max_rows:
                break
            batch.append(self._waiting.popleft())
            rows += waiting.rows
        return batch

    def _drop_cancelled(self):
        while self._waiting and self._waiting[0].future.done():
            self._waiting.popleft()
