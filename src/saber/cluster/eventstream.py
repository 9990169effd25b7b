"""A task's event log in a Redis stream, so every API node serves every task's events.

Entry ids are ``<seq>-1``: the sequence number is the SSE ``id`` and what ``Last-Event-ID`` names,
on every node. Redis refuses an id not above the stream's last one, which fences writers: a
worker that lost its run (its lease expired and another took it over) fails its next append
instead of interleaving events. The stream is trimmed to ``maxlen`` entries (approximately) and
expires ``ttl`` seconds after its last event. The entry that ends a run carries ``f=1``.

A run's ``start`` is written once, by whichever comes first: the API node that queued the run
(so that its stream says at once that the request was accepted) or the worker that took it. A
worker that takes over a run an earlier worker began (it died, or handed the run back) writes a
second ``start`` with ``restarted: true`` and its ``attempt``: the tokens before it are void, the
answer is written again after it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from saber.jsonsafe import dumps, to_jsonable
from saber.outages import dependency_down, retrying
from saber.redact import redacted_value
from saber.runs.eventlog import EventLog, LoggedEvent

log = logging.getLogger(__name__)

STALL_SECONDS = 5.0
"""A read of Redis that has not answered this long past its own blocking time is a stall (Redis
frozen, the network cut): the follower is told it is reconnecting."""


class StreamTakenOver(Exception):
    """Another writer appended to this task's stream: this one no longer owns the run."""


def stream_key(prefix: str, task_id: str) -> str:
    return f"{prefix}events:{task_id}"


def _decode(entry_id: Any, fields: Any) -> tuple[LoggedEvent, bool]:
    def text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    values = {text(k): text(v) for k, v in fields.items()}
    seq = int(text(entry_id).split("-", 1)[0])
    event = LoggedEvent(seq=seq, type=values["t"], data=json.loads(values["d"]))
    return event, values.get("f") == "1"


class StreamWriter:
    """Appends one run's events; ``open`` continues after what an earlier worker wrote.

    It keeps the entries of the task's stream it read or wrote, so that when Redis comes back
    empty (restarted without persistence) it writes them again under their own numbers before its
    next event: a client that reconnects, or comes later, still gets every event. With
    ``patience``, an append waits that long for Redis to come back (the run goes on meanwhile;
    its events wait in order)."""

    def __init__(self, redis: Redis, prefix: str, task_id: str, *, maxlen: int, ttl: int, seq: int = 0,
                 patience: float = 0.0) -> None:
        """``seq``: the number of the stream's last event, when known (``open`` reads it)."""
        self.redis, self.key, self.maxlen, self.ttl = redis, stream_key(prefix, task_id), maxlen, ttl
        self.seq = seq
        self.patience = patience
        self.ended = False
        """The last entry ends a run (it carries ``f=1``)."""
        self.last_type = ""
        """The type of the last entry."""
        self.last_interrupted = False
        """The last entry is the ``done`` of an interrupted run."""
        self._kept: deque[tuple[int, dict[str, str]]] = deque(maxlen=maxlen)

    async def open(self) -> None:
        """Continue after the stream's last entry (writing again what Redis lost of this writer's)."""
        last: Any = await self.redis.xrevrange(self.key, count=1)
        if not last:
            await self._restore()
            return
        if _decode(last[0][0], last[0][1])[0].seq <= self.seq:
            return
        entries: Any = await self.redis.xrange(self.key, min=f"({self.seq}-1")
        for entry_id, fields in entries:
            event, final = _decode(entry_id, fields)
            self._kept.append((event.seq, {_text(k): _text(v) for k, v in fields.items()}))
            self.seq, self.ended, self.last_type = event.seq, final, event.type
            self.last_interrupted = final and bool(event.data.get("interrupted"))

    async def _restore(self) -> None:
        """Redis holds none of this task's stream (it restarted empty): write what this writer
        knows of it again, under the same numbers."""
        if not self._kept:
            return
        async with self.redis.pipeline(transaction=True) as pipe:
            for seq, fields in self._kept:
                pipe.xadd(self.key, fields, id=f"{seq}-1", maxlen=self.maxlen, approximate=True)  # type: ignore[arg-type]
            pipe.expire(self.key, self.ttl)
            await pipe.execute()
        log.warning("%s: Redis had lost the stream; its %d event(s) were written again", self.key, len(self._kept))

    def _begun(self, after: int) -> bool:
        """The run whose events follow event ``after`` has its ``start`` and nothing more."""
        return self.seq == after + 1 and self.last_type == "start"

    async def append_start(self, data: dict[str, Any], *, after: int, attempt: int) -> None:
        """Append the ``start`` of the run whose events follow event ``after``, unless it is there
        already (see the module's docstring); after events of an earlier attempt, a restart."""
        if self._begun(after):
            return
        if self.seq > after:
            await self.append("start", {**data, "restarted": True, "attempt": attempt})
            return
        try:
            await self.append("start", data)
        except StreamTakenOver:
            await self.open()
            if not self._begun(after):
                raise

    async def append(self, type_: str, data: dict[str, Any], *, final: bool = False) -> int:
        seq = self.seq + 1
        fields = {"t": type_, "d": dumps(await redacted_value(to_jsonable(data)))}  # served later: no secret
        if final:
            fields["f"] = "1"
        try:
            await self._add(seq, fields, retried=False)
        except Exception as exc:
            if self.patience <= 0 or not dependency_down(exc):
                raise
            async for attempt in retrying(timeout=self.patience, wait_initial=0.25, wait_max=5.0):
                with attempt:
                    await self._add(seq, fields, retried=True)
        self._kept.append((seq, fields))
        self.seq, self.ended, self.last_type = seq, final, type_
        self.last_interrupted = final and bool(data.get("interrupted"))
        return seq

    async def _add(self, seq: int, fields: dict[str, str], *, retried: bool) -> None:
        """Add entry ``seq``; into a stream that must exist already (``NOMKSTREAM``) once this writer
        knows some of it, so that a stream Redis lost is noticed, and restored first."""
        try:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.xadd(self.key, fields, id=f"{seq}-1", maxlen=self.maxlen, approximate=True,  # type: ignore[arg-type]
                          nomkstream=bool(self._kept))
                pipe.expire(self.key, self.ttl)
                added, _ = await pipe.execute()
        except ResponseError as exc:
            if "equal or smaller" not in str(exc):
                raise
            if retried and await self._landed(seq, fields):  # the try that lost its connection had written it
                return
            raise StreamTakenOver(f"{self.key}: another writer appended event {seq}") from None
        if added is None:  # the stream is gone: Redis restarted empty
            await self._restore()
            await self._add(seq, fields, retried=retried)

    async def _landed(self, seq: int, fields: dict[str, str]) -> bool:
        entries: Any = await self.redis.xrange(self.key, min=f"{seq}-1", max=f"{seq}-1")
        return bool(entries) and {_text(k): _text(v) for k, v in entries[0][1].items()} == fields


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisEventLog(EventLog):
    """The server's event log read from Redis. ``events`` mirrors what this node has read (for
    ``last`` and the JSON answer); ``follow`` reads Redis itself, from any position."""

    def __init__(self, redis: Redis, prefix: str, task_id: str, *, block_ms: int = 1000, floor: int = 0) -> None:
        """``floor``: where this run's events start in the task's stream (a resumed task's stream
        holds its earlier runs' events before it)."""
        super().__init__()
        self.redis, self.key, self.block_ms, self.floor = redis, stream_key(prefix, task_id), block_ms, floor

    def append(self, type_: str, data: dict[str, Any]) -> LoggedEvent:
        raise RuntimeError("a Redis event log is written by the worker running the task")

    def _mirror(self, event: LoggedEvent, final: bool) -> None:
        if event.seq > (self.events[-1].seq if self.events else 0):
            self.events.append(event)
        if final:
            self.closed = True
            self._wake()

    async def load(self) -> None:
        """Read everything the stream holds now into ``events``."""
        after = self.events[-1].seq if self.events else self.floor
        entries: Any = await self.redis.xrange(self.key, min=f"({after}-1")
        for entry_id, fields in entries:
            self._mirror(*_decode(entry_id, fields))

    async def follow(self, after: int = 0) -> AsyncIterator[LoggedEvent]:
        """Every event with a sequence number above ``after``, then new ones, until the run's end.
        While Redis cannot be reached, a ``reconnecting`` event (numbered as the last event sent,
        so a client that reconnects with it as ``Last-Event-ID`` misses nothing) says so, and the
        log reads on once Redis is back: the worker numbers its events on after the ones sent, and
        writes again the events of a stream Redis lost (``StreamWriter``)."""
        position = f"{max(0, after, self.floor)}-1"
        while True:
            try:
                reply: Any = await asyncio.wait_for(self.redis.xread({self.key: position}, block=self.block_ms, count=256),
                                                    self.block_ms / 1000.0 + STALL_SECONDS)
                if not reply and await self._ended_before(position):
                    return
            except Exception as exc:
                if not dependency_down(exc):
                    raise
                yield LoggedEvent(seq=int(position.split("-", 1)[0]), type="reconnecting",
                                  data={"message": f"the event store cannot be reached ({exc}); reconnecting"})
                await self._reconnect()
                continue
            for _key, entries in reply or []:
                for entry_id, fields in entries:
                    event, final = _decode(entry_id, fields)
                    position = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                    self._mirror(event, final)
                    yield event
                    if final:
                        return

    async def _reconnect(self) -> None:
        async for attempt in retrying(timeout=None, wait_initial=0.5, wait_max=5.0):
            with attempt:
                await asyncio.wait_for(self.redis.ping(), STALL_SECONDS)

    async def last_seq(self) -> int:
        last = await self.redis.xrevrange(self.key, count=1)
        return _decode(last[0][0], last[0][1])[0].seq if last else 0

    async def _ended_before(self, position: str) -> bool:
        """The run's last entry is at or before ``position``: nothing more will come."""
        last = await self.redis.xrevrange(self.key, count=1)
        if not last:
            return False
        event, final = _decode(last[0][0], last[0][1])
        return final and self.floor < event.seq <= int(position.split("-", 1)[0])
