"""Assets in DAG files: ``Asset``, ``outlets=[...]`` and asset schedules.

An :class:`Asset` is a URI plus an optional name and group. A task's ``outlets``
records one asset event per successful try; a DAG whose ``schedule`` is a list of
assets (all of them), a condition (``a | b``, ``a & b``, nested) or an
:class:`AssetOrTimeSchedule` runs when its condition is met by new events::

    from orchestrator import DAG, Asset, AssetOrTimeSchedule, task

    sales = Asset("warehouse://sales/daily")
    costs = Asset("warehouse://costs/daily", name="costs", group="finance")

    with DAG("margins", schedule=[sales, costs]):          # both have a new event
        ...
    with DAG("alerts", schedule=sales | costs):             # either has
        ...
    with DAG("weekly", schedule=AssetOrTimeSchedule("0 6 * * 1", [sales])):
        ...

A mistake (a non-URI, a cron string mixed into an asset list) raises
:class:`~orchestrator.errors.DagDefinitionError` naming the file and line.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from orchestrator.authoring.where import Where
from orchestrator.authoring.where import caller as _caller
from orchestrator.authoring.where import definition_error as _fail
from orchestrator.scheduling.asset_conditions import (
    AssetCondition,
    AssetRef,
    all_of,
    uri_problem,
)


class Asset(AssetRef):
    """A piece of data a task produces and a DAG may be scheduled on.

    ``uri`` is ``scheme://location`` (``s3://bucket/key``, ``warehouse://sales/daily``,
    ``file:///data/x.csv``); two assets with the same URI are the same asset. ``name``
    defaults to the URI (Airflow's rule); ``group`` is a free label for the UI.

    >>> sales = Asset("warehouse://sales/daily", group="sales")
    >>> (sales | Asset("s3://b/costs")).describe()
    'warehouse://sales/daily | s3://b/costs'
    """

    name: str
    group: str | None
    watchers: tuple[Any, ...]

    def __init__(
        self,
        uri: str,
        name: str | None = None,
        group: str | None = None,
        watchers: list[Any] | None = None,
    ) -> None:
        where = _caller()
        problem = uri_problem(uri)
        if problem:
            raise _fail(problem, where)
        for what, value in (("name", name), ("group", group)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise _fail(
                    f"asset {uri!r}: {what} must be a non-empty string, got {value!r}", where
                )
            if isinstance(value, str) and len(value) > 250:
                raise _fail(f"asset {uri!r}: {what} is longer than 250 characters", where)
        object.__setattr__(self, "uri", uri)
        object.__setattr__(self, "name", name or uri)
        object.__setattr__(self, "group", group)
        # issue 30: asset watchers (orchestrator.watchers) turn messages into events
        from orchestrator.authoring.watchers import BaseWatcher

        if watchers is not None and (
            not isinstance(watchers, list | tuple)
            or not all(isinstance(w, BaseWatcher) for w in watchers)
        ):
            raise _fail(
                f"asset {uri!r}: watchers must be a list of orchestrator.watchers "
                f"watchers, got {watchers!r}",
                where,
            )
        object.__setattr__(self, "watchers", tuple(watchers or ()))

    def __repr__(self) -> str:
        extra = "" if self.name == self.uri else f", name={self.name!r}"
        extra += f", group={self.group!r}" if self.group else ""
        return f"Asset({self.uri!r}{extra})"

    def as_data(self) -> dict[str, Any]:
        data = {"uri": self.uri, "name": self.name, "group": self.group}
        if self.watchers:  # only when used: other DAGs keep their version hash
            data["watchers"] = [w.to_data() for w in self.watchers]
        return data


class AssetOrTimeSchedule:
    """Run on a time schedule *or* when the asset condition is met, whichever comes.

    ``timetable`` is anything ``schedule=`` takes for time (cron, preset, timedelta);
    ``assets`` an asset, a condition or a list (all of them)::

        schedule=AssetOrTimeSchedule("0 5 * * *", [sales, costs])
        schedule=AssetOrTimeSchedule(timetable="@daily", assets=sales | costs)
    """

    def __init__(self, timetable: str | timedelta, assets: Any) -> None:
        where = _caller()
        if timetable is None or isinstance(timetable, list | tuple | AssetCondition):
            raise _fail(
                "AssetOrTimeSchedule: timetable must be a cron string, preset or timedelta, "
                f"got {timetable!r}",
                where,
            )
        self.timetable = timetable
        self.condition = _condition(assets, where, "AssetOrTimeSchedule assets")


def _condition(value: Any, where: Where, what: str) -> AssetCondition:
    if isinstance(value, AssetCondition):
        return value
    if isinstance(value, list | tuple | set | frozenset):
        items = list(value)
        if not items:
            raise _fail(f"{what}: an empty list of assets waits for nothing", where)
        bad = [i for i in items if not isinstance(i, AssetCondition)]
        if bad:
            if any(isinstance(b, str | timedelta) for b in bad):
                raise _fail(
                    f"{what}: {bad[0]!r} is a time schedule mixed into a list of assets; "
                    "to run on a time schedule or on assets, use "
                    "AssetOrTimeSchedule(timetable, assets)",
                    where,
                )
            raise _fail(f"{what}: {bad[0]!r} is not an Asset or asset condition", where)
        return all_of(items)
    raise _fail(f"{what}: expected assets, got {value!r}", where)


def split_schedule(schedule: Any, dag_id: str, where: Where) -> tuple[Any, AssetCondition | None]:
    """``schedule=`` as (its time part for ``parse_schedule``, its asset condition)."""
    if isinstance(schedule, AssetOrTimeSchedule):
        return schedule.timetable, schedule.condition
    if isinstance(schedule, AssetCondition | list | tuple | set | frozenset):
        return None, _condition(schedule, where, f"DAG {dag_id!r}: schedule")
    return schedule, None


def outlet_list(outlets: Iterable[Any] | None, task_id: str, where: Where) -> tuple[Asset, ...]:
    """A task's ``outlets``: Assets, each once, in the order given."""
    if outlets is None:
        return ()
    if isinstance(outlets, Asset):
        outlets = [outlets]
    if isinstance(outlets, str) or not isinstance(outlets, Iterable):
        raise _fail(
            f"task {task_id!r}: outlets must be a list of Asset objects, got {outlets!r}", where
        )
    out: dict[str, Asset] = {}
    for o in outlets:
        if not isinstance(o, Asset):
            raise _fail(
                f"task {task_id!r}: outlet {o!r} is not an Asset (write Asset({o!r}) for a URI)",
                where,
            )
        out.setdefault(o.uri, o)
    return tuple(out.values())


def assets_data(condition: AssetCondition | None, tasks: Iterable[Any]) -> list[dict[str, Any]]:
    """Every asset a DAG names (schedule and outlets), for the store's asset table."""
    seen: dict[str, dict[str, Any]] = {}

    def add(data: dict[str, Any]) -> None:  # one declaring watchers wins (issue 30)
        if data["uri"] not in seen or (
            data.get("watchers") and not seen[data["uri"]].get("watchers")
        ):
            seen[data["uri"]] = data

    def visit(c: AssetCondition) -> None:
        if isinstance(c, Asset):
            add(c.as_data())
        elif isinstance(c, AssetRef):
            seen.setdefault(c.uri, {"uri": c.uri, "name": c.uri, "group": None})
        else:
            for o in getattr(c, "objects", ()):
                visit(o)

    if condition is not None:
        visit(condition)
    for t in tasks:
        for o in getattr(t, "outlets", ()):
            add(o.as_data())
    return [seen[k] for k in sorted(seen)]
