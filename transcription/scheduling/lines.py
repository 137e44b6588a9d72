"""The waiting lines: which job a worker of a queue takes next, fairly across accounts.

Each queue (media, asr, burn) has one line in Redis, a sorted set of the jobs waiting for it;
without REDIS_URL (the embedded default `make run` starts: SQLite and the filesystem broker) the
lines are kept in the database instead, by the same rule (line_services.py), so every account is
served in turn there too. Each function here chooses the store; tests/transcription/test_lines.py
runs the same tests on both. A
job's place is its account's turn, by start-time fair queuing: a job joining the line gets the
start tag max(V, F[account]), where V is the tag of the job taken last (the line's clock) and
F[account] the tag after the account's previous waiting job (its tag + 1). A worker takes the
lowest tag (ZPOPMIN). So an account's 25-video playlist gets the tags V, V+1, .., V+24, and a
single job of another account, arriving while the first of them runs, gets V: it is taken next.
An account that waited for nothing gets no credit for its idle time (its tag starts at V), and
one alone in the line has its jobs taken in order, one after another: nobody waits for a turn
that is not there. Jobs of one tag (a round) go in the order of their ids.

The Celery message a worker receives only says "a job joined this queue's line" (dispatch.py);
the worker takes whichever job the line gives it. A place in line is ZRANK, O(log n): the poll's
X-Queue-Position (transcription.api.front.polls) reads it in the same round trip as the cached answer.

Beside the line, for /metrics and the account's turn: who owns each waiting job, how many jobs
each account has waiting (a sorted set, so the top accounts come in one call), and since when
each job waits (by queue and by account). All of it moves in one Lua script per change, so the
counts never drift from the line. The lines' store is the only truth about order; PostgreSQL stays the truth
about jobs: an entry whose job ended or runs elsewhere is dropped when taken (dispatch.job_take),
and a line lost with Redis is rebuilt by the sweeper, which sends again every job nobody runs.
It builds the per-account keys inside the scripts, which a Redis Cluster would not allow; the
service runs one Redis (docs/decisions.md).
"""

from __future__ import annotations

import functools
import time
from typing import NamedTuple

from django.conf import settings

from config import shared_cache

from . import line_services

QUEUES = ("media", "asr", "burn")
PREFIX = "line:"

# KEYS: the line, its clock, F by account, owner by job, waiting count by account, since by job.
# The per-account "since" set is KEYS[6] .. ':' .. account.
_LEAVE = """
local function leave(job)
  local account = redis.call('HGET', KEYS[4], job)
  redis.call('ZREM', KEYS[1], job)
  redis.call('HDEL', KEYS[4], job)
  redis.call('ZREM', KEYS[6], job)
  if account then
    redis.call('ZREM', KEYS[6] .. ':' .. account, job)
    if tonumber(redis.call('ZINCRBY', KEYS[5], -1, account)) <= 0 then
      redis.call('ZREM', KEYS[5], account)
      redis.call('HDEL', KEYS[3], account)
    end
  end
  return account or ''
end
"""

# ARGV: job, account, now (ms), the tag to use ('' for the account's next turn). 1: joined, 0: it
# was in the line already (it keeps its place).
_JOIN = """
local job, account = ARGV[1], ARGV[2]
if redis.call('ZSCORE', KEYS[1], job) then return 0 end
local tag = tonumber(ARGV[4])
if not tag then
  local clock = tonumber(redis.call('GET', KEYS[2]) or '0')
  tag = math.max(clock, tonumber(redis.call('HGET', KEYS[3], account) or '0'))
  redis.call('HSET', KEYS[3], account, tag + 1)
end
redis.call('ZADD', KEYS[1], tag, job)
redis.call('HSET', KEYS[4], job, account)
redis.call('ZINCRBY', KEYS[5], 1, account)
redis.call('ZADD', KEYS[6], ARGV[3], job)
redis.call('ZADD', KEYS[6] .. ':' .. account, ARGV[3], job)
return 1
"""

# {job, tag, account} of the first job in line, taken out; {} when the line is empty.
_TAKE = (
    _LEAVE
    + """
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #first == 0 then return {} end
local job, tag = first[1], first[2]
if tonumber(tag) > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], tag) end
return {job, tag, leave(job)}
"""
)

_FORGET = _LEAVE + "\nreturn leave(ARGV[1])\n"


class Taken(NamedTuple):
    """A job taken from the line of `queue`, with what puts it back in its place."""

    queue: str
    job_id: str
    tag: str
    account: str


def _keys(queue: str) -> list[str]:
    base = f"{PREFIX}{queue}"
    return [base, f"{base}:clock", f"{base}:finish", f"{base}:owner", f"{base}:waiting", f"{base}:since"]


@functools.lru_cache(maxsize=1)
def _scripts():
    client = shared_cache.client()
    return client.register_script(_JOIN), client.register_script(_TAKE), client.register_script(_FORGET)


def _in_database() -> bool:
    """No Redis configured: the lines are the database's (a Redis that is configured but down is
    not replaced by them: dispatch then sends jobs by name, first come first served, for a moment)."""
    return not settings.REDIS_URL


def _client():
    """The Redis client, or raise shared_cache.Unavailable when there is none or it failed a moment ago."""
    client = shared_cache.reachable_client()
    if client is None:
        raise shared_cache.Unavailable("no Redis for the waiting lines")
    return client


def join(queue: str, job_id, account_id) -> bool:
    """Put the job in the line at its account's next turn; False when it is in it already.
    Raises shared_cache.Unavailable when Redis is configured but down."""
    if _in_database():
        return line_services.line_join(queue, str(job_id), str(account_id), None)
    _client()
    join_script = _scripts()[0]
    now = int(time.time() * 1000)
    return bool(join_script(keys=_keys(queue), args=[str(job_id), str(account_id), now, ""]))


def put_back(taken: Taken) -> None:
    """Give a job taken from the line its place again (its worker stopped before it ran)."""
    if _in_database():
        line_services.line_join(taken.queue, taken.job_id, taken.account, taken.tag)
        return
    _client()
    join_script = _scripts()[0]
    now = int(time.time() * 1000)
    join_script(keys=_keys(taken.queue), args=[taken.job_id, taken.account, now, taken.tag])


def take(queue: str) -> Taken | None:
    """The first job of the line, taken out of it; None when the line is empty."""
    if _in_database():
        entry = line_services.line_take(queue)
        return None if entry is None else Taken(queue, entry.job, entry.tag, entry.account)
    _client()
    reply = _scripts()[1](keys=_keys(queue))
    if not reply:
        return None
    job, tag, account = (part.decode() if isinstance(part, bytes) else str(part) for part in reply)
    return Taken(queue, job, tag, account)


def forget(job_id) -> None:
    """Take the job out of every line (it ended while it waited)."""
    if _in_database():
        line_services.line_forget(QUEUES, str(job_id))
        return
    _client()
    forget_script = _scripts()[2]
    for queue in QUEUES:
        forget_script(keys=_keys(queue), args=[str(job_id)])


def others_waiting(queue: str, account_id) -> bool:
    """Whether a job of an account other than `account_id` waits in the queue's line (a worker
    about to take a chunk of a running job leaves it to that job instead: stages/spreading.py).
    Raises shared_cache.Unavailable when Redis is configured but down."""
    if _in_database():
        return line_services.line_others_waiting(queue, str(account_id))
    waiting = _keys(queue)[4]  # accounts with jobs waiting; an account leaves it at zero
    pipe = _client().pipeline(transaction=False)
    pipe.zcard(waiting)
    pipe.zscore(waiting, str(account_id))
    accounts, own = pipe.execute()
    return accounts - (1 if own else 0) > 0


def place_keys() -> list[str]:
    """The lines, for a script that reads a job's place (transcription.api.front.polls)."""
    return [_keys(queue)[0] for queue in QUEUES]


PLACE_LUA = """
local function place(first_key, job)
  for i = first_key, first_key + 2 do
    local rank = redis.call('ZRANK', KEYS[i], job)
    if rank then return rank + 1 end
  end
  return 0
end
"""


def place(job_id) -> int | None:
    """The job's place in the line it waits in (1: the next job taken), None when it waits in none."""
    if _in_database():
        return line_services.line_place(QUEUES, str(job_id))
    pipe = _client().pipeline(transaction=False)
    for key in place_keys():
        pipe.zrank(key, str(job_id))
    return next((rank + 1 for rank in pipe.execute() if rank is not None), None)


class LineStats(NamedTuple):
    queue: str
    waiting: int
    oldest_wait: float  # seconds the longest-waiting job has waited, 0 when none
    accounts: list[tuple[str, int, float]]  # (account id, jobs waiting, longest wait), most jobs first


def stats(top: int) -> list[LineStats]:
    """Every line's depth and longest wait, and those of its `top` accounts with the most jobs waiting."""
    if _in_database():
        return [LineStats(queue, *_figures(line_services.line_figures(queue, top))) for queue in QUEUES]
    client = _client()
    now = time.time()
    pipe = client.pipeline(transaction=False)
    for queue in QUEUES:
        line, *_, waiting, since = _keys(queue)
        pipe.zcard(line)
        pipe.zrange(since, 0, 0, withscores=True)
        pipe.zrevrange(waiting, 0, top - 1, withscores=True)
    replies = pipe.execute()
    per_queue = [replies[i : i + 3] for i in range(0, len(replies), 3)]
    pipe = client.pipeline(transaction=False)
    for queue, (_, _, accounts) in zip(QUEUES, per_queue, strict=True):
        for account, _ in accounts:
            pipe.zrange(f"{_keys(queue)[5]}:{account.decode()}", 0, 0, withscores=True)
    oldest_by_account = iter(pipe.execute())

    def wait(first: list) -> float:
        return max(0.0, now - first[0][1] / 1000) if first else 0.0

    found = []
    for queue, (depth, oldest, accounts) in zip(QUEUES, per_queue, strict=True):
        rows = [(account.decode(), int(count), wait(next(oldest_by_account))) for account, count in accounts]
        found.append(LineStats(queue, int(depth), wait(oldest), rows))
    return found


def _figures(figures: line_services.LineFigures) -> tuple[int, float, list[tuple[str, int, float]]]:
    return figures.waiting, figures.oldest_wait, figures.accounts
