"""``StoreStatsService``: the broker-wide put and get counters behind the runtime info's
store keys (RocketMQ's ``StoreStatsService`` and ``BrokerStats``): put and get rates over
10 s, 1 min and 10 min, put latency (its maximum, its distribution and the 99th and 99.9th
percentiles over the last minute), failed puts, and the message totals at midnight.

RocketMQ counts these inside its store; OrbitMQ's send and pull processors feed them (the
store stays free of broker bookkeeping), with an integer addition or two per request. Message
and byte totals are the ``BrokerStatsManager``'s per-topic and per-group records, summed
when read, not counted twice.
"""

from __future__ import annotations

import asyncio
import datetime
from collections import deque
from itertools import accumulate
from typing import Final

from orbitmq.broker.broker_stats_manager import BrokerStatsManager
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.periodic import cancel_and_wait, run_every

#: RocketMQ's PUT_MESSAGE_ENTIRE_TIME_MAX_DESC: the put latency distribution's ranges.
DISTRIBUTION_LABELS: Final = (
    "[<=0ms]",
    "[0~10ms]",
    "[10~50ms]",
    "[50~100ms]",
    "[100~200ms]",
    "[200~500ms]",
    "[500ms~1s]",
    "[1~2s]",
    "[2~3s]",
    "[3~4s]",
    "[4~5s]",
    "[5~10s]",
    "[10s~]",
)
_DISTRIBUTION_UPPER: Final = (1, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10_000)
#: RocketMQ's percentile buckets (PUT_MESSAGE_ENTIRE_TIME_BUCKETS): upper bounds in ms, 1 ms
#: apart up to 20, 2 up to 50, ... 1000 up to 10 s, then one bucket for the rest.
_STEPS: Final = ((1, 20), (2, 15), (5, 10), (10, 10), (50, 6), (100, 5), (1000, 9))
LATENCY_BOUNDS_MS: Final = tuple(accumulate(step for step, times in _STEPS for _ in range(times)))
_TABLE_MS: Final = 10_000


def _index_table(upper_bounds: tuple[int, ...], inclusive: bool) -> tuple[int, ...]:
    """For each ms up to 10 s, its bucket: the first bound above it (or at it, inclusive)."""
    table = []
    bucket = 0
    for ms in range(_TABLE_MS + 1):
        while bucket < len(upper_bounds) and (
            ms > upper_bounds[bucket] if inclusive else ms >= upper_bounds[bucket]
        ):
            bucket += 1
        table.append(bucket)
    return tuple(table)


# Each ms's bucket in the two tables, the slot over 10 s in the last bucket of each.
_DISTRIBUTION_OF_MS: Final = (*_index_table(_DISTRIBUTION_UPPER, inclusive=False), 12)
_LATENCY_BUCKET_OF_MS: Final = (
    *_index_table(LATENCY_BOUNDS_MS, inclusive=True),
    len(LATENCY_BOUNDS_MS),
)
_OVER_TABLE: Final = _TABLE_MS + 1


def _fold(by_ms: list[int], bucket_of_ms: tuple[int, ...], buckets: int) -> list[int]:
    counts = [0] * buckets
    for ms, n in enumerate(by_ms):
        if n:
            counts[bucket_of_ms[ms]] += n
    return counts


SAMPLE_INTERVAL_S: Final = 1.0
#: Per-second samples kept: the 10-minute rate needs 601.
_MAX_SAMPLES: Final = 601
_ROLL_EVERY_TICKS: Final = 60

#: A per-second sample: (time ms, messages put, pulls that found, pulls that missed,
#: messages transferred).
_Sample = tuple[int, int, int, int, int]


def _percentile(buckets: list[int], fraction: float) -> float:
    """RocketMQ's findPutMessageEntireTimePX: interpolated inside the bucket holding it."""
    total = sum(buckets)
    target = int(total * fraction)
    passed = 0
    bounds = (*LATENCY_BOUNDS_MS, LATENCY_BOUNDS_MS[-1])
    for i, count in enumerate(buckets):
        if target <= passed + count:
            low = bounds[i - 1] if i > 0 else 0
            return low + ((bounds[i] - low) * (target - passed) / count if count else 0.0)
        passed += count
    return 0.0


class StoreStatsService:
    """Owns the put/get counters, the per-second samples and the task that takes them.

    Fed and read on the broker's event loop only: not thread-safe.
    """

    def __init__(self, broker_stats: BrokerStatsManager, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._broker_stats = broker_stats
        self.boot_timestamp = clock.now_ms()
        self.put_failed_times = 0
        self.put_entire_time_max_ms = 0
        self.get_entire_time_max_ms = 0
        self.get_miss = 0
        # Puts by their time in whole ms (the last slot: over 10 s); the distribution and
        # the percentiles are folded from it when read, so a put pays one increment.
        self._put_ms = [0] * (_TABLE_MS + 2)
        self._last_put_ms: list[int] | None = None
        self._samples: deque[_Sample] = deque(maxlen=_MAX_SAMPLES)
        self._ticks = 0
        self._day = self._today()
        self.msg_totals_yesterday_morning = (0, 0)
        self.msg_totals_today_morning = (0, 0)
        self._task: asyncio.Task[None] | None = None

    # -- the hot paths ---------------------------------------------------------------------

    def on_put(self, elapsed_ms: int, ok: bool) -> None:
        """One put request's time in ms, and whether it was stored."""
        self._put_ms[elapsed_ms if elapsed_ms <= _TABLE_MS else _OVER_TABLE] += 1
        # An ``if``, not max(): the builtin's call costs more on this path.
        if elapsed_ms > self.put_entire_time_max_ms:  # noqa: PLR1730
            self.put_entire_time_max_ms = elapsed_ms
        if not ok:
            self.put_failed_times += 1

    def on_get(self, found: int, elapsed_ms: int) -> None:
        """One pull: ``found`` messages (0: a miss), read in ``elapsed_ms``. The found
        pulls and their messages are the BrokerStatsManager's GROUP_GET records."""
        if not found:
            self.get_miss += 1
        if elapsed_ms > self.get_entire_time_max_ms:  # noqa: PLR1730
            self.get_entire_time_max_ms = elapsed_ms

    # -- reading ---------------------------------------------------------------------------

    @property
    def put_times_total(self) -> int:
        """Messages stored since the start (RocketMQ's putMessageTimesTotal)."""
        return self._broker_stats.put_totals()[0]

    @property
    def put_size_total(self) -> int:
        return self._broker_stats.put_totals()[1]

    @property
    def get_transferred(self) -> int:
        """Messages pulled since the start (RocketMQ's getMessageTransferedMsgCount)."""
        return self._broker_stats.get_totals()[1]

    def _tps(self, index: int, seconds: int) -> float | None:
        """The rate of a sampled counter over the last ``seconds`` (fewer when the broker is
        younger, at least one second); None before two samples exist."""
        samples = self._samples
        if len(samples) < 2:
            return None
        first = samples[max(0, len(samples) - 1 - seconds)]
        last = samples[-1]
        span_ms = last[0] - first[0]
        return (last[index] - first[index]) * 1000.0 / span_ms if span_ms > 0 else 0.0

    def tps_text(self, index: int) -> str:
        """RocketMQ's "10s 1min 10min" rates, space separated."""
        rates = (self._tps(index, seconds) for seconds in (10, 60, 600))
        return " ".join("" if rate is None else repr(rate) for rate in rates)

    def get_total_tps_text(self) -> str:
        parts = []
        for seconds in (10, 60, 600):
            found, miss = self._tps(2, seconds), self._tps(3, seconds)
            parts.append(repr((found or 0.0) + (miss or 0.0)))
        return " ".join(parts)

    def _minute_of_puts(self) -> list[int]:
        """The last full minute's puts by ms (the current minute's before one passed)."""
        return self._last_put_ms or self._put_ms

    def distribution_text(self) -> str:
        """The put latency distribution over a minute, as RocketMQ's
        putMessageDistributeTime."""
        counts = _fold(self._minute_of_puts(), _DISTRIBUTION_OF_MS, len(DISTRIBUTION_LABELS))
        return "".join(
            f"{label}:{n} " for label, n in zip(DISTRIBUTION_LABELS, counts, strict=True)
        )

    def put_latency(self, fraction: float) -> float:
        """The put latency under which ``fraction`` of a minute's puts stayed, in ms."""
        buckets = _fold(self._minute_of_puts(), _LATENCY_BUCKET_OF_MS, len(LATENCY_BOUNDS_MS) + 1)
        return _percentile(buckets, fraction)

    def runtime_text(self) -> str:
        """RocketMQ's "[ d days, h hours, m minutes, s seconds ]"."""
        elapsed = (self._clock.now_ms() - self.boot_timestamp) // 1000
        days, rest = divmod(elapsed, 86_400)
        hours, rest = divmod(rest, 3600)
        minutes, seconds = divmod(rest, 60)
        return f"[ {days} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"

    # -- sampling --------------------------------------------------------------------------

    def _today(self) -> datetime.date:
        return datetime.datetime.fromtimestamp(self._clock.now_ms() / 1000).date()

    def sampling(self) -> None:
        """The per-second sample; each minute the put times roll, each midnight the day's
        totals (RocketMQ's BrokerStats.record)."""
        put_total = self.put_times_total
        found, transferred = self._broker_stats.get_totals()
        self._samples.append((self._clock.now_ms(), put_total, found, self.get_miss, transferred))
        self._ticks += 1
        if self._ticks % _ROLL_EVERY_TICKS == 0:
            self._last_put_ms, self._put_ms = self._put_ms, [0] * len(self._put_ms)
        today = self._today()
        if today != self._day:
            self._day = today
            self.msg_totals_yesterday_morning = self.msg_totals_today_morning
            self.msg_totals_today_morning = (put_total, transferred)

    async def start(self) -> None:
        if self._task is not None:
            return
        self.sampling()
        self._task = asyncio.create_task(
            run_every(SAMPLE_INTERVAL_S, self.sampling, "store stats sampling"),
            name="StoreStatsService",
        )

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
