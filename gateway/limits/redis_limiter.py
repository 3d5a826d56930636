"""Rate limits shared through Redis (``redis.url``): exact across every process.

Each check is one Lua script, run atomically by Redis, over every scope of the call at
once (one round trip): it drops each scope's entries older than the window, reads what
is left, and either counts the call in every scope or in none (the algorithm is
``gateway.limits.decisions``'s, clocked by Redis's own ``TIME`` so the replicas' clocks
do not matter). The end of a call that held tokens or a slot is one more script.

Per scope (``gateway:rl:<kind>:<id>``): ``:r`` a sorted set of admissions (call id by
time), ``:t`` the same for tokens with ``:v`` a hash of each call's tokens and their
``total``, ``:c`` a sorted set of the calls in flight by the end of their lease (a
process that dies mid-call frees its slots when the lease ends). Every key expires
shortly after its last entry could.

Redis away (an error or a timeout of the 1 s client): ``rateLimits.onRedisOutage``
``local`` limits in this process alone meanwhile, ``refuse`` answers 503
``rate_limit_unavailable``; one warning when it goes, one line when it is back, and for a
second after a failure Redis is not asked (a dead server costs no call a timeout).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from redis.asyncio import Redis

from gateway.db.engine import describe_error
from gateway.domain.errors import RateLimitUnavailable
from gateway.limits import Ticket
from gateway.limits.decisions import (
    CONCURRENT,
    REQUESTS,
    TOKENS,
    WINDOW_MS,
    Reading,
    Scope,
    Verdict,
)
from gateway.limits.local import InProcessLimiter, new_call_id

log = logging.getLogger(__name__)

PREFIX = "gateway:rl:"
RETRY_AFTER_FAILURE_SECONDS = 1.0
_MEASURES = {1: REQUESTS, 2: TOKENS, 3: CONCURRENT}

ADMIT = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local id = ARGV[1]
local need = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
local cut = now - window
local refused, measure = 0, 0
local out = {}
local function last_score(key)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then return tonumber(last[2]) + window - now end
  return 0
end
-- Pass 1: drop what left the window, read what is left, find the first refusal.
for i = 0, n - 1 do
  local rk, tk, vk, ck = KEYS[4*i+1], KEYS[4*i+2], KEYS[4*i+3], KEYS[4*i+4]
  local rpm, tpm, conc = tonumber(ARGV[6+3*i]), tonumber(ARGV[7+3*i]), tonumber(ARGV[8+3*i])
  local count, total, inflight = 0, 0, 0
  if rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', rk, '-inf', cut)
    count = redis.call('ZCARD', rk)
  end
  if tpm > 0 then
    local old = redis.call('ZRANGEBYSCORE', tk, '-inf', cut)
    if #old > 0 then
      local gone = 0
      for first = 1, #old, 1000 do
        local last = math.min(first + 999, #old)
        local part = redis.call('HMGET', vk, unpack(old, first, last))
        for j = 1, #part do gone = gone + (tonumber(part[j]) or 0) end
        redis.call('HDEL', vk, unpack(old, first, last))
      end
      redis.call('ZREMRANGEBYSCORE', tk, '-inf', cut)
      redis.call('HINCRBY', vk, 'total', -gone)
    end
    total = tonumber(redis.call('HGET', vk, 'total') or '0')
  end
  if conc > 0 then
    redis.call('ZREMRANGEBYSCORE', ck, '-inf', now)
    inflight = redis.call('ZCARD', ck)
  end
  if refused == 0 then
    if rpm > 0 and count + 1 > rpm then refused, measure = i + 1, 1
    elseif tpm > 0 and total + need > tpm then refused, measure = i + 1, 2
    elseif conc > 0 and inflight + 1 > conc then refused, measure = i + 1, 3 end
  end
  local base = 7 * i
  out[base+1], out[base+2], out[base+3] = count, 0, 0
  out[base+4], out[base+5], out[base+6], out[base+7] = total, 0, 0, inflight
end
-- Pass 2, refused: when each scope frees room, and when its window empties.
if refused > 0 then
  for i = 0, n - 1 do
    local rk, tk, vk = KEYS[4*i+1], KEYS[4*i+2], KEYS[4*i+3]
    local rpm, tpm = tonumber(ARGV[6+3*i]), tonumber(ARGV[7+3*i])
    local base = 7 * i
    local count, total = out[base+1], out[base+4]
    if rpm > 0 then
      if count + 1 > rpm then
        local e = redis.call('ZRANGE', rk, count - rpm, count - rpm, 'WITHSCORES')
        out[base+2] = tonumber(e[2]) + window - now
      end
      out[base+3] = last_score(rk)
    end
    if tpm > 0 then
      if need > tpm then
        out[base+5] = -1
      elseif total + need > tpm then
        local entries = redis.call('ZRANGE', tk, 0, -1, 'WITHSCORES')
        local freed = 0
        for j = 1, #entries, 2 do
          freed = freed + (tonumber(redis.call('HGET', vk, entries[j])) or 0)
          if total - freed + need <= tpm then
            out[base+5] = tonumber(entries[j + 1]) + window - now
            break
          end
        end
      end
      out[base+6] = last_score(tk)
    end
  end
else
  -- Admitted: counted in every scope.
  for i = 0, n - 1 do
    local rk, tk, vk, ck = KEYS[4*i+1], KEYS[4*i+2], KEYS[4*i+3], KEYS[4*i+4]
    local rpm, tpm, conc = tonumber(ARGV[6+3*i]), tonumber(ARGV[7+3*i]), tonumber(ARGV[8+3*i])
    local base = 7 * i
    if rpm > 0 then
      redis.call('ZADD', rk, now, id)
      redis.call('PEXPIRE', rk, window + 1000)
      out[base+1], out[base+3] = out[base+1] + 1, window
    end
    if tpm > 0 then
      redis.call('ZADD', tk, now, id)
      redis.call('HSET', vk, id, need)
      redis.call('HINCRBY', vk, 'total', need)
      redis.call('PEXPIRE', tk, window + 1000)
      redis.call('PEXPIRE', vk, window + 1000)
      out[base+4], out[base+6] = out[base+4] + need, window
    end
    if conc > 0 then
      redis.call('ZADD', ck, now + lease, id)
      if redis.call('PTTL', ck) < lease + 1000 then
        redis.call('PEXPIRE', ck, lease + 1000)
      end
      out[base+7] = out[base+7] + 1
    end
  end
end
table.insert(out, 1, measure)
table.insert(out, 1, refused)
return out
"""

SETTLE = """
local id = ARGV[1]
local tokens = tonumber(ARGV[2])
for i = 0, (#KEYS / 3) - 1 do
  local tk, vk, ck = KEYS[3*i+1], KEYS[3*i+2], KEYS[3*i+3]
  local flags = ARGV[3+i]
  if tokens >= 0 and string.find(flags, 't') then
    local held = redis.call('HGET', vk, id)
    if held then
      redis.call('HSET', vk, id, tokens)
      redis.call('HINCRBY', vk, 'total', tokens - tonumber(held))
    end
  end
  if string.find(flags, 'c') then redis.call('ZREM', ck, id) end
end
return 1
"""


class RedisLimiter:
    def __init__(
        self,
        redis: Redis,
        local: InProcessLimiter,
        *,
        lease_ms: int,
        refuse_on_outage: bool = False,
        prefix: str = PREFIX,
        monotonic: Callable[[], float] = time.monotonic,
        window_ms: int = WINDOW_MS,  # tests only: the minute, shortened
    ) -> None:
        self._redis = redis
        self._local = local
        self._lease = lease_ms
        self._refuse = refuse_on_outage
        self._prefix = prefix
        self._monotonic = monotonic
        self._window = window_ms
        self._admit = redis.register_script(ADMIT)
        self._settle = redis.register_script(SETTLE)
        self._skip_until = 0.0
        self.down = False
        self.outage_checks = 0  # checks made without Redis (local or refused)

    async def admit(self, scopes: Sequence[Scope], need: int) -> tuple[Verdict, Ticket | None]:
        if self._skip_until and self._monotonic() < self._skip_until:
            return await self._outage(scopes, need)
        keys: list[str] = []
        args: list[int | str] = []
        call_id = new_call_id()
        args.extend((call_id, need, self._lease, self._window, len(scopes)))
        for scope in scopes:
            base = self._prefix + scope.storage
            keys.extend((base + ":r", base + ":t", base + ":v", base + ":c"))
            limit = scope.limit
            args.extend(
                (
                    limit.requests_per_minute or 0,
                    limit.tokens_per_minute or 0,
                    limit.concurrent or 0,
                )
            )
        try:
            raw = await self._admit(keys=keys, args=args)
        except Exception as error:
            self._failed(error)
            return await self._outage(scopes, need)
        self._answered()
        values = [int(v) for v in raw]
        refused, measure = values[0], values[1]
        readings = tuple(Reading(*values[2 + 7 * i : 9 + 7 * i]) for i in range(len(scopes)))
        if refused:
            return Verdict(False, readings, refused - 1, _MEASURES[measure]), None
        return Verdict(True, readings), Ticket(call_id, tuple(scopes), local=False)

    async def settle(self, ticket: Ticket, tokens: int | None) -> None:
        if ticket.local:
            self._local.release(ticket, tokens)
            return
        keys: list[str] = []
        flags: list[str] = []
        for scope in ticket.scopes:
            limit = scope.limit
            flag = ("t" if limit.tokens_per_minute is not None else "") + (
                "c" if limit.concurrent is not None else ""
            )
            if not flag:
                continue
            base = self._prefix + scope.storage
            keys.extend((base + ":t", base + ":v", base + ":c"))
            flags.append(flag)
        if not keys:
            return
        try:
            await self._settle(
                keys=keys, args=[ticket.call_id, -1 if tokens is None else tokens, *flags]
            )
        except Exception as error:
            # Its slot is freed when its lease ends; its tokens stay as held.
            log.warning("rate limit settlement not written to Redis: %s", describe_error(error))

    def release(self, ticket: Ticket, tokens: int | None) -> None:
        if ticket.local:
            self._local.release(ticket, tokens)

    async def _outage(self, scopes: Sequence[Scope], need: int) -> tuple[Verdict, Ticket | None]:
        self.outage_checks += 1
        if self._refuse:
            raise RateLimitUnavailable(
                "The rate limiter's Redis is unreachable; the call was not attempted."
            )
        return self._local.check(scopes, need)

    def _failed(self, error: Exception) -> None:
        self._skip_until = self._monotonic() + RETRY_AFTER_FAILURE_SECONDS
        if self.down:
            return
        self.down = True
        how = "refused (503)" if self._refuse else "limited by each process alone"
        log.warning(
            "rate limits: Redis unreachable, calls are %s until it answers: %s",
            how,
            describe_error(error),
        )

    def _answered(self) -> None:
        if not self.down:
            return
        self.down = False
        self._skip_until = 0.0
        log.warning("rate limits: Redis answers again, limits are shared by every process")
