"""The Redis client of the shared state (``redis.url``): short timeouts, one pool a process.

Imported only when Redis is configured: the client costs about 6 MB in a process that
uses no Redis. Every operation waits at most 1 s; they all run in background tasks, so a
slow or dead Redis costs a fallback to per-process state, never a stalled call.
"""

from __future__ import annotations

from redis.asyncio import BlockingConnectionPool, Redis

SOCKET_TIMEOUT_SECONDS = 1.0
# The rate limiter's own pool (one check per call, on the call's path): calls beyond it
# wait for a connection (up to the 1 s timeout) instead of failing as redis-py's default
# pool does when its connections are all taken, which would read as an outage.
LIMITER_CONNECTIONS = 64


def redis_client(url: str) -> Redis:
    return Redis.from_url(
        url,
        socket_timeout=SOCKET_TIMEOUT_SECONDS,
        socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
    )


def limiter_client(url: str) -> Redis:
    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=LIMITER_CONNECTIONS,
        timeout=SOCKET_TIMEOUT_SECONDS,
        socket_timeout=SOCKET_TIMEOUT_SECONDS,
        socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
    )
    return Redis.from_pool(pool)  # the client owns the pool: aclose() closes it
