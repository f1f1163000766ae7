"""Micro-batching: requests that arrive close together run through the model as one batch.

Each request hands over its records and waits. One worker takes the first waiting request, then
keeps gathering for up to `max_wait` seconds, or until `max_batch` records are in hand, and runs
them all in one call on a single model thread (the model is never used by two threads at once).
Each request gets back exactly its own results, in its own order. A request is never split: one
larger than `max_batch` runs alone. When a batch fails, its requests run again one by one, so
that a single bad request fails alone and the others are answered.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field


@dataclass
class _Waiting:
    records: list[dict]
    answer: asyncio.Future


@dataclass
class BatchStats:
    """What the batcher has done, for `GET /info` and the load bench."""

    batches: int = 0
    records: int = 0
    largest: int = 0
    sizes: list[int] = field(default_factory=list, repr=False)

    def add(self, size: int) -> None:
        self.batches += 1
        self.records += size
        self.largest = max(self.largest, size)

    def to_json(self) -> dict:
        mean = self.records / self.batches if self.batches else 0.0
        return {"batches": self.batches, "records": self.records, "largest": self.largest, "mean": round(mean, 2)}


class MicroBatcher:
    """Gathers concurrent `submit` calls into batches for `run(records) -> results` (one result
    per record, in order), which runs on one dedicated thread."""

    def __init__(self, run: Callable[[list[dict]], list[dict]], max_batch: int = 32, max_wait: float = 0.01):
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.run, self.max_batch, self.max_wait = run, max_batch, max_wait
        self.stats = BatchStats()
        self._queue: asyncio.Queue[_Waiting] | None = None
        self._worker: asyncio.Task | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bertkit-model")
        self._held: _Waiting | None = None  # taken from the queue but left for the next batch

    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._worker = asyncio.create_task(self._work())

    async def stop(self) -> None:
        """Answer everything already submitted, then stop."""
        if self._worker is None:
            return
        await self._queue.join()
        self._worker.cancel()
        try:
            await self._worker
        except asyncio.CancelledError:
            pass
        self._worker = None
        self._thread.shutdown(wait=True)

    async def submit(self, records: list[dict]) -> list[dict]:
        if self._queue is None:
            raise RuntimeError("the batcher is not started")
        answer = asyncio.get_running_loop().create_future()
        await self._queue.put(_Waiting(records, answer))
        return await answer

    async def _work(self) -> None:
        while True:
            batch = await self._gather()
            try:
                await self._answer(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _gather(self) -> list[_Waiting]:
        first = self._held or await self._queue.get()
        self._held = None
        batch, size = [first], len(first.records)
        deadline = time.monotonic() + self.max_wait
        while size < self.max_batch:
            left = deadline - time.monotonic()
            try:
                waiting = self._queue.get_nowait() if left <= 0 else await asyncio.wait_for(self._queue.get(), left)
            except (asyncio.TimeoutError, asyncio.QueueEmpty):
                break
            if size + len(waiting.records) > self.max_batch:
                self._held = waiting  # it opens the next batch
                break
            batch.append(waiting)
            size += len(waiting.records)
        return batch

    async def _answer(self, batch: list[_Waiting]) -> None:
        loop = asyncio.get_running_loop()
        records = [record for waiting in batch for record in waiting.records]
        try:
            results = await loop.run_in_executor(self._thread, self.run, records)
        except Exception as err:  # noqa: BLE001 - handed to the requests, one by one
            if len(batch) == 1:
                _settle(batch[0].answer, error=err)
                return
            for waiting in batch:  # find the request that fails; the others are answered
                await self._answer_alone(loop, waiting)
            return
        self.stats.add(len(records))
        start = 0
        for waiting in batch:
            end = start + len(waiting.records)
            _settle(waiting.answer, results[start:end])
            start = end

    async def _answer_alone(self, loop, waiting: _Waiting) -> None:
        try:
            results = await loop.run_in_executor(self._thread, self.run, waiting.records)
        except Exception as err:  # noqa: BLE001
            _settle(waiting.answer, error=err)
            return
        self.stats.add(len(waiting.records))
        _settle(waiting.answer, results)


def _settle(answer: asyncio.Future, results=None, error: Exception | None = None) -> None:
    if answer.done():  # the client went away
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(results)
