"""The grid of a DAG's page (issue 27 item 3): its query parameters and its run header.

``runs`` (how many runs: 25, 50, 100 or 365), ``run_state`` and ``run_type`` (show only
the runs in that state, of that type) are read strictly: anything else is a 400 naming
the parameter. The header of each run's column shows its date in the DAG's timezone,
its run type and a bar as tall as its duration is long against the longest shown.

>>> header([run], "Europe/Berlin", now)[0].date   # doctest: +SKIP
'Jan 29'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from flask import request

from orchestrator.errors import ConfigError
from orchestrator.states import RunState

from .formatting import seconds_text

RUNS_SHOWN = (25, 50, 100, 365)
# every run_type a run row can hold (store/runs, store/assets, store/backfills), and
# the letter its column shows
RUN_TYPES = {
    "scheduled": "S",
    "manual": "M",
    "backfill": "B",
    "asset_triggered": "A",
    "triggered": "T",
}
BAR_H = 28  # the tallest duration bar, in pixels


@dataclass(frozen=True)
class GridQuery:
    """What the grid shows: how many runs, and which (``""``: any).

    >>> GridQuery(runs=50, run_type="manual").args()
    {'runs': 50, 'run_type': 'manual'}
    """

    runs: int = RUNS_SHOWN[0]
    run_state: str = ""
    run_type: str = ""

    def args(self) -> dict[str, Any]:
        """The query parameters that give this grid again (the defaults left out)."""
        out: dict[str, Any] = {}
        if self.runs != RUNS_SHOWN[0]:
            out["runs"] = self.runs
        if self.run_state:
            out["run_state"] = self.run_state
        if self.run_type:
            out["run_type"] = self.run_type
        return out


def read_grid_query() -> GridQuery:
    """The request's grid parameters, each checked (ConfigError, a 400, names it)."""
    raw = request.args.get("runs", "")
    runs = RUNS_SHOWN[0]
    if raw != "":
        if raw not in {str(n) for n in RUNS_SHOWN}:
            raise ConfigError(
                f"query parameter 'runs': expected one of {', '.join(map(str, RUNS_SHOWN))}, "
                f"got {raw[:40]!r}"
            )
        runs = int(raw)
    return GridQuery(runs, *read_run_filters())


def read_run_filters() -> tuple[str, str]:
    """The request's ``run_state`` and ``run_type`` (``""``: any), each checked; the
    DAG page's grid and its JSON API (``/api/v1/dags/<dag_id>/grid``) take both."""
    state = request.args.get("run_state", "")
    if state and state not in {s.value for s in RunState}:
        raise ConfigError(
            f"query parameter 'run_state': {state[:40]!r} is not a run state "
            f"(one of: {', '.join(s.value for s in RunState)})"
        )
    kind = request.args.get("run_type", "")
    if kind and kind not in RUN_TYPES:
        raise ConfigError(
            f"query parameter 'run_type': {kind[:40]!r} is not a run type "
            f"(one of: {', '.join(RUN_TYPES)})"
        )
    return state, kind


@dataclass(frozen=True)
class RunHead:
    """One run's column head: its date, time, type and duration bar."""

    run_id: str
    date: str  # "Jan 29", in the DAG's timezone
    time: str  # "02:00"
    run_type: str
    letter: str  # "S", "M"...
    bar: float  # the duration bar's height in pixels (0: not started)
    running: bool  # no end yet: the bar grows until now
    length: str  # its duration in words ("3 m 04 s", "so far" while it runs)


def header(runs: list[Any], timezone: str, now: datetime) -> list[RunHead]:
    """The grid's column heads, bars scaled to the longest duration among ``runs``."""
    zone = ZoneInfo(timezone)
    lengths = []
    for r in runs:
        if r.start_date is None:
            lengths.append(0.0)
        else:
            lengths.append(max(((r.end_date or now) - r.start_date).total_seconds(), 0.0))
    longest = max(lengths, default=0.0) or 1.0
    out = []
    for r, seconds in zip(runs, lengths, strict=True):
        local = r.logical_date.astimezone(zone)
        bar = 0.0 if r.start_date is None else max(BAR_H * seconds / longest, 1.0)
        out.append(
            RunHead(
                r.run_id,
                local.strftime("%b %d"),
                local.strftime("%H:%M"),
                r.run_type,
                RUN_TYPES.get(r.run_type, r.run_type[:1].upper() or "?"),
                round(bar, 1),
                r.start_date is not None and r.end_date is None,
                _length(r, seconds),
            )
        )
    return out


def _length(run: Any, seconds: float) -> str:
    if run.start_date is None:
        return "not started"
    text = seconds_text(seconds)
    return f"{text} so far" if run.end_date is None else text
