"""Redis keys and channels the API nodes and workers share, and the Redis client they open."""

from __future__ import annotations

from redis.asyncio import Redis

from saber.config import ConfigError, Settings

CANCEL_SECONDS = 3600
"""How long a cancel request waits for a worker to take a run that is between workers."""


def cancel_channel(prefix: str) -> str:
    return f"{prefix}cancel"


def wake_channel(prefix: str) -> str:
    """Published on every enqueue, so idle workers claim at once instead of at their next poll."""
    return f"{prefix}queue"


def cancel_key(prefix: str, task_id: str) -> str:
    return f"{prefix}cancel:{task_id}"


async def request_cancel(redis: Redis, prefix: str, task_id: str) -> None:
    """Tell whichever worker runs ``task_id`` to cancel it: a key (for a worker that takes the run
    later, or missed the message) and a message on the cancel channel (for the one running it now)."""
    await redis.set(cancel_key(prefix, task_id), "1", ex=CANCEL_SECONDS)
    await redis.publish(cancel_channel(prefix), task_id)


def distributed(settings: Settings) -> bool:
    """Both a database URL and a Redis URL: API nodes enqueue, workers run."""
    return bool(settings.database.url and settings.redis.url)


def open_redis(settings: Settings) -> Redis:
    if not settings.redis.url:
        raise ConfigError("the distributed mode needs redis.url (SABER_REDIS_URL)")
    try:
        return Redis.from_url(settings.redis.url, socket_connect_timeout=5, health_check_interval=30)
    except ValueError as exc:
        raise ConfigError(f"redis.url: {exc}") from None


async def check_redis(redis: Redis, settings: Settings) -> None:
    """Reach Redis once, so a wrong URL is one clear line at start instead of a failure per request."""
    from redis.exceptions import RedisError

    from saber.db.database import mask_url

    try:
        await redis.ping()
    except (RedisError, OSError) as exc:
        raise ConfigError(f"cannot reach Redis at {mask_url(str(settings.redis.url))}: {exc}") from None
