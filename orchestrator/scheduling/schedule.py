"""When does a DAG fire?  Pure schedule arithmetic: no database, no clock.

``schedule`` values accepted by :func:`parse_schedule`:

* cron, 5 fields ``minute hour day-of-month month day-of-week``, or 6 fields with
  SECONDS as the 6th (last) field, croniter's convention: ``"*/10 * * * * 30"`` fires
  at second 30 of every 10th minute.  croniter's ``L``/``W``/``#`` and month/day
  names work; hashed (``H``), random (``R``) and year (7th) fields are rejected;
* presets ``@yearly @annually @monthly @weekly @daily @midnight @hourly`` (expanded
  to cron) and ``@once`` (fires once, at the start date);
* a positive ``timedelta``: start, start+i, start+2i, ... (pure UTC arithmetic);
* ``None``: manual triggering only.

All datetimes returned are aware UTC.  Cron runs on the wall clock of the DAG's
timezone, with these DST rules:

* a nonexistent local time (spring forward) fires at the first instant after the
  gap: ``0 2 * * *`` Europe/Berlin fires 2026-03-29 at 03:00 CEST (01:00 UTC), once;
* a repeated local time (fall back) fires once, at its first occurrence (fold=0):
  ``30 2 * * *`` fires 2026-10-25 at 02:30 CEST (00:30 UTC) only;
* except when the hour field matches every hour (``*``, ``*/1``, ``0-23``): then a
  nonexistent local time is skipped (``7 * * * *`` Europe/London fires 2025-03-30 at
  00:07 GMT and 02:07 BST, not also at 02:00 BST, as croniter and dagster do) and the
  repeated hour fires again (``0 * * * *`` fires at 02:00 CEST and 02:00 CET), so
  hourly/minutely crons fire every real hour/minute, without duplicates.

Fire times are strictly increasing; no UTC instant is returned twice.
"""

from __future__ import annotations

import copy
import heapq
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from itertools import count
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, CroniterError, croniter

__all__ = ["Schedule", "ScheduleError", "parse_schedule", "PRESETS"]

PRESETS: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELDS = (
    ("minute", "0..59"),
    ("hour", "0..23"),
    ("day-of-month", "1..31"),
    ("month", "1..12 or jan..dec"),
    ("day-of-week", "0..7 or sun..sat"),
    ("second", "0..59"),
)
_HASH_OR_RANDOM = re.compile(r"^[HhRr](\(|/|$)")
_US = timedelta(microseconds=1)
_SEC = timedelta(seconds=1)
_EPOCH = datetime(2000, 1, 1)  # fixed croniter start: never read the clock


class ScheduleError(ValueError):
    """A schedule, timezone or date given to this module is invalid."""


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule; build it with :func:`parse_schedule`.

    >>> s = parse_schedule("0 2 * * *", timezone="Europe/Berlin",
    ...                    start=datetime(2026, 3, 27, tzinfo=UTC))
    >>> s.describe()
    'cron 0 2 * * * (Europe/Berlin)'
    >>> s.next_after(datetime(2026, 3, 28, 12, tzinfo=UTC)).isoformat()  # DST gap
    '2026-03-29T01:00:00+00:00'
    >>> [t.hour for t in s.fire_times(s.start, datetime(2026, 3, 30, 12, tzinfo=UTC))]
    [1, 1, 1, 0]
    """

    kind: str  # "cron" | "interval" | "once" | "none"
    expr: str | None  # cron expression (presets expanded), None unless kind == "cron"
    interval: timedelta | None  # only for kind == "interval"
    timezone: str  # IANA name
    start: datetime | None  # aware UTC; None only for kind "none" without a start date
    end: datetime | None  # aware UTC, inclusive; None = open ended

    def next_after(self, after: datetime) -> datetime | None:
        """First fire time strictly after ``after``, never before start, None past end."""
        after = _aware(after, "after")
        if self.kind == "none" or self.start is None:
            return None
        if self.kind == "once":
            t: datetime | None = self.start if after < self.start else None
        elif self.kind == "interval":
            assert self.interval is not None
            if after < self.start:
                t = self.start
            else:
                t = self.start + ((after - self.start) // self.interval + 1) * self.interval
        else:
            t = self._cron_first(max(after, self.start - _US))
        return t if t is not None and (self.end is None or t <= self.end) else None

    def first(self) -> datetime | None:
        """The first fire time >= start (None for kind "none")."""
        return None if self.start is None else self.next_after(self.start - _US)

    def previous_before(self, at: datetime) -> datetime | None:
        """Last fire time strictly before ``at``, not before start (end respected), or None."""
        at = _aware(at, "at")
        if self.kind == "none" or self.start is None:
            return None
        if self.end is not None:
            at = min(at, self.end + _US)
        if at <= self.start:
            return None
        if self.kind == "once":
            return self.start
        if self.kind == "interval":
            return self._grid_before(at)
        t = self._cron_first(at, reverse=True)
        return t if t is not None and t >= self.start else None

    def data_interval(self, logical_date: datetime) -> tuple[datetime, datetime]:
        """``(previous fire time, logical_date)``; not clamped to start/end.

        The first interval run gets ``(logical_date - interval, logical_date)``, the
        first cron run gets the previous cron match even though it is before start;
        "once" and "none" get ``(logical_date, logical_date)``.
        """
        ld = _aware(logical_date, "logical_date")
        if self.kind == "interval":
            return self._grid_before(ld), ld
        if self.kind == "cron":
            prev = self._cron_first(ld, reverse=True)
            return (prev if prev is not None else ld), ld
        return ld, ld

    def fire_times(
        self, start: datetime, end: datetime, limit: int | None = None
    ) -> list[datetime]:
        """All fire times ``t`` with ``start <= t <= end`` (clamped to the schedule's
        own start/end), ascending, at most ``limit`` of them."""
        lo, hi = _aware(start, "start"), _aware(end, "end")
        if limit is not None and limit < 0:
            raise ScheduleError(f"limit must be >= 0, got {limit}")
        if self.kind == "none" or self.start is None or limit == 0:
            return []
        lo = max(lo, self.start)
        hi = hi if self.end is None else min(hi, self.end)
        t0 = self.next_after(lo - _US)
        if t0 is None:
            return []
        if self.kind == "cron":
            it: Iterable[datetime] = self._cron_iter(lo - _US)
        elif self.kind == "interval" and self.interval is not None:
            it = (t0 + k * self.interval for k in count())
        else:
            it = [t0]
        out: list[datetime] = []
        for t in it:
            if t > hi or (limit is not None and len(out) >= limit):
                break
            out.append(t)
        return out

    def describe(self) -> str:
        """Short human text, e.g. ``cron 0 2 * * * (Europe/Berlin)``."""
        if self.kind == "cron":
            return f"cron {self.expr} ({self.timezone})"
        if self.kind == "interval":
            return f"every {self.interval}"
        if self.kind == "once" and self.start is not None:
            return f"once at {self.start.isoformat()}"
        return "manual only"

    # -- internals -------------------------------------------------------------

    def _grid_before(self, at: datetime) -> datetime:
        """Largest ``start + k*interval`` strictly before ``at`` (k may be negative)."""
        assert self.start is not None and self.interval is not None
        q, r = divmod(at - self.start, self.interval)
        return self.start + (q if r else q - 1) * self.interval

    def _cron_first(self, bound: datetime, reverse: bool = False) -> datetime | None:
        """The first of :meth:`_cron_iter`: remembered per (expression, zone, bound),
        which is all it depends on, so the thousands of DAGs a tick plans with the same
        cron and zone at the same instant cost one walk (issue 29)."""
        assert self.expr is not None
        return _cron_first(self.expr, self.timezone, bound.astimezone(UTC), reverse)

    def _cron_iter(self, bound: datetime, reverse: bool = False) -> Iterator[datetime]:
        """Cron fire instants strictly after ``bound`` ascending (strictly before it,
        descending, if ``reverse``); not clamped to start/end.

        Wall times are mapped to UTC by two monotone mappings (fold=0 and fold=1,
        a nonexistent time going to the end of its gap); the fold=1 one only for
        every-hour crons, which skip nonexistent times instead.  The croniter start is chosen so that nothing is missed
        near a fold; the few extra candidates are skipped.
        """
        assert self.expr is not None
        tz = ZoneInfo(self.timezone)
        local = bound.astimezone(tz)
        offsets = [local.replace(fold=f).utcoffset() or timedelta(0) for f in (0, 1)]
        wall = bound.replace(tzinfo=None) + (max(offsets) if reverse else min(offsets))
        whole = wall.replace(microsecond=0)
        wall = whole + _SEC if reverse and whole != wall else whole
        every_hour = _every_hour(self.expr)
        folds = (0, 1) if every_hour else (0,)
        streams = [_wall_stream(self.expr, tz, wall, f, reverse, every_hour) for f in folds]
        last: datetime | None = None
        for t in heapq.merge(*streams, reverse=reverse):
            if (t >= bound if reverse else t <= bound) or t == last:
                continue
            last = t
            yield t


def _wall_stream(
    expr: str, tz: ZoneInfo, wall: datetime, fold: int, reverse: bool, skip_gap: bool
) -> Iterator[datetime]:
    """croniter's wall times from ``wall`` as UTC instants; ``skip_gap`` drops the wall
    times a spring-forward gap removes instead of moving them to its end."""
    it = _cron_at(expr, wall)
    step = it.get_prev if reverse else it.get_next
    while True:
        try:
            w = step(datetime)
        except CroniterBadDateError:
            return
        t = w.replace(tzinfo=tz, fold=fold).astimezone(UTC)
        if t.astimezone(tz).replace(tzinfo=None) == w:
            yield t
        elif not skip_gap:  # a wall time in a gap: the end of the gap
            yield to_utc(w, tz, fold)


def to_utc(wall: datetime, tz: ZoneInfo, fold: int = 0) -> datetime:
    """UTC instant of a naive wall time; a nonexistent one maps to the end of its gap."""
    t = wall.replace(tzinfo=tz, fold=fold).astimezone(UTC)
    if t.astimezone(tz).replace(tzinfo=None) == wall:
        return t
    a, b = (wall.replace(tzinfo=tz, fold=f).astimezone(UTC) for f in (0, 1))
    lo, hi = int(min(a, b).timestamp()), int(max(a, b).timestamp())
    new_offset = datetime.fromtimestamp(hi, tz).utcoffset()
    while hi - lo > 1:  # binary search for the transition instant
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, tz).utcoffset() == new_offset:
            hi = mid
        else:
            lo = mid
    return datetime.fromtimestamp(hi, UTC)


@lru_cache(maxsize=16384)
def _cron_first(expr: str, timezone: str, bound: datetime, reverse: bool) -> datetime | None:
    probe = Schedule("cron", expr, None, timezone, None, None)
    return next(probe._cron_iter(bound, reverse), None)


@lru_cache(maxsize=4096)
def _cron_template(expr: str) -> croniter:
    return croniter(expr, _EPOCH)


def _cron_at(expr: str, wall: datetime) -> croniter:
    """A croniter of ``expr`` at ``wall``: a copy of one parsed per expression (issue 29:
    parsing is two thirds of making one, and a tick plans thousands of DAGs). croniter
    copies its expanded fields before changing them, so the copies share them safely."""
    it = copy.copy(_cron_template(expr))
    it.set_current(wall, force=True)
    return it


@lru_cache(maxsize=1024)
def _every_hour(expr: str) -> bool:
    hours = croniter(expr, _EPOCH).expanded[1]
    return hours == ["*"] or set(hours) >= set(range(24))


def _aware(dt: object, what: str) -> datetime:
    if not isinstance(dt, datetime):
        raise ScheduleError(f"{what} must be a datetime, got {type(dt).__name__} {dt!r}")
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ScheduleError(f"{what} must be timezone-aware, got naive {dt.isoformat()}")
    return dt.astimezone(UTC)


def _check_cron(expr: str) -> str:
    fields = expr.split()
    bad = f"bad cron expression '{expr}'"
    if len(fields) not in (5, 6):
        raise ScheduleError(
            f"{bad}: expected 5 fields (minute hour day-of-month month day-of-week) "
            f"or 6 with seconds last, got {len(fields)}"
        )
    for (name, _), tok in zip(_FIELDS, fields, strict=False):
        if any(_HASH_OR_RANDOM.match(part) for part in tok.split(",")):
            raise ScheduleError(f"{bad}: hashed (H) and random (R) {name} fields are not supported")
    expr = " ".join(fields)
    try:
        croniter(expr, _EPOCH)
    except CroniterError as exc:
        for i, ((name, allowed), tok) in enumerate(zip(_FIELDS, fields, strict=False)):
            probe = ["*"] * len(fields)
            probe[i] = tok
            try:
                croniter(" ".join(probe), _EPOCH)
            except CroniterError:
                raise ScheduleError(
                    f"{bad}: invalid {name} field '{tok}': {name} must be in {allowed}"
                ) from exc
        raise ScheduleError(f"{bad}: {exc}") from exc
    try:
        croniter(expr, _EPOCH).get_next(datetime)
    except CroniterBadDateError as exc:
        raise ScheduleError(f"{bad}: it never matches any date") from exc
    return expr


def parse_schedule(
    schedule: str | timedelta | None,
    *,
    timezone: str = "UTC",
    start: datetime | None,
    end: datetime | None = None,
) -> Schedule:
    """Validate a DAG's schedule settings and build a :class:`Schedule`.

    ``start``/``end`` must be aware (any zone; stored as UTC); ``end`` is inclusive.

    >>> parse_schedule("@daily", start=datetime(2026, 1, 1, tzinfo=UTC)).expr
    '0 0 * * *'
    >>> parse_schedule(None, start=None).describe()
    'manual only'
    >>> parse_schedule("@daily", timezone="Mars/Base", start=None)
    Traceback (most recent call last):
    ...
    orchestrator.scheduling.schedule.ScheduleError: unknown timezone 'Mars/Base'
    """
    if not isinstance(timezone, str):
        raise ScheduleError(f"timezone must be an IANA name string, got {timezone!r}")
    try:
        ZoneInfo(timezone)
    except (KeyError, ValueError, OSError):
        raise ScheduleError(f"unknown timezone '{timezone}'") from None

    kind, expr, interval = "none", None, None
    if isinstance(schedule, timedelta):
        if schedule <= timedelta(0):
            raise ScheduleError(f"interval schedule must be positive, got {schedule}")
        kind, interval = "interval", schedule
    elif isinstance(schedule, str):
        text = schedule.strip()
        if not text:
            raise ScheduleError("schedule is an empty string (use None for manual only)")
        if text.startswith("@"):
            if text.lower() == "@once":
                kind = "once"
            elif text.lower() in PRESETS:
                kind, expr = "cron", PRESETS[text.lower()]
            else:
                raise ScheduleError(
                    f"unknown schedule preset '{text}' (expected one of "
                    f"{', '.join([*PRESETS, '@once'])})"
                )
        else:
            kind, expr = "cron", _check_cron(text)
    elif schedule is not None:
        raise ScheduleError(
            "schedule must be a cron string, a preset like '@daily', '@once', a timedelta "
            f"or None, got {type(schedule).__name__} {schedule!r}"
        )

    start_utc = None if start is None else _aware(start, "start_date")
    end_utc = None if end is None else _aware(end, "end_date")
    if start_utc is None and kind != "none":
        shown = f"'{schedule}'" if isinstance(schedule, str) else str(schedule)
        raise ScheduleError(f"start_date is required for schedule {shown}")
    if start_utc is not None and end_utc is not None and end_utc < start_utc:
        raise ScheduleError(
            f"end_date {end_utc.isoformat()} is before start_date {start_utc.isoformat()}"
        )
    return Schedule(kind, expr, interval, timezone, start_utc, end_utc)
