"""A task's Redis stream through Redis outages: a stream Redis lost (restarted empty) is written
again under the same numbers before the next event, and a follower is told it is reconnecting."""

from __future__ import annotations

from cluster_helpers import REDIS_URL, free_port
from redis.asyncio import Redis

from saber.cluster.eventstream import RedisEventLog, StreamWriter, stream_key


async def test_a_stream_redis_lost_is_written_again_under_the_same_numbers(redis_prefix: str) -> None:
    redis = Redis.from_url(REDIS_URL)
    try:
        writer = StreamWriter(redis, redis_prefix, "t1", maxlen=1000, ttl=60)
        await writer.open()
        for i in range(3):
            await writer.append("token", {"content": f"w{i}"})
        await redis.delete(stream_key(redis_prefix, "t1"))  # Redis restarted without persistence
        await writer.append("done", {"answer": "w0w1w2", "interrupted": False}, final=True)
        log = RedisEventLog(redis, redis_prefix, "t1")
        seen = [(e.seq, e.type) async for e in log.follow(0)]
        assert seen == [(1, "token"), (2, "token"), (3, "token"), (4, "done")]
    finally:
        await redis.aclose()


async def test_a_follower_is_told_when_redis_cannot_be_reached(redis_prefix: str) -> None:
    gone = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=1)
    try:
        follow = RedisEventLog(gone, redis_prefix, "t2").follow(after=7)
        event = await anext(follow)
        assert (event.seq, event.type) == (7, "reconnecting"), "numbered as the last event the client got"
        assert "reconnecting" in event.data["message"]
        await follow.aclose()
    finally:
        await gone.aclose()
