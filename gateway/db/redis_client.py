"""The Redis client of the shared state (``redis.url``): short timeouts, one pool a process.

Imported only when Redis is configured: the client costs about 6 MB in a process that
uses no Redis. Every operation waits at most 1 s; they all run in background tasks, so a
slow or dead Redis costs a fallback to per-process state, never a stalled call.
"""

from __future__ import annotations

from redis.asyncio import Redis

SOCKET_TIMEOUT_SECONDS = 1.0


def redis_client(url: str) -> Redis:
    return Redis.from_url(
        url,
        socket_timeout=SOCKET_TIMEOUT_SECONDS,
        socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
    )
