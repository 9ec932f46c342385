"""Asset conditions: when an asset-scheduled DAG runs, as pure functions.

A DAG scheduled on assets waits for a *condition* over asset URIs: ``AssetAll``
(every listed asset has a new event; ``schedule=[a, b]`` and ``a & b``), ``AssetAny``
(at least one has; ``a | b``), nested freely. A condition is judged on the set of
URIs that have at least one queued (not yet consumed) event for the DAG::

    >>> c = AssetAny(AssetAll(AssetRef("s3://a"), AssetRef("s3://b")), AssetRef("s3://c"))
    >>> c.evaluate({"s3://a"}), c.evaluate({"s3://a", "s3://b"}), c.evaluate({"s3://c"})
    (False, True, True)
    >>> c.describe()
    '(s3://a & s3://b) | s3://c'

:func:`plan_asset_runs` turns a DAG's queue (events in arrival order) into the event
sets that each become one run, per the DAG's misfire policy. Nothing here touches the
database or a clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

MAX_URI_LENGTH = 1000
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_BAD_CHARS = re.compile(r"[\s\x00-\x1f\x7f]")


def uri_problem(uri: Any) -> str | None:
    """Why ``uri`` is not an asset URI (``scheme://...``), or None if it is one."""
    if not isinstance(uri, str):
        return f"an asset URI must be a string, got {type(uri).__name__}"
    if not uri:
        return "an asset URI must not be empty"
    if len(uri) > MAX_URI_LENGTH:
        return f"an asset URI is at most {MAX_URI_LENGTH} characters, got {len(uri)}"
    if _BAD_CHARS.search(uri):
        return f"asset URI {uri[:80]!r} contains whitespace or a control character"
    scheme, sep, rest = uri.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme) or not rest.strip("/"):
        return (
            f"{uri[:80]!r} is not an asset URI: expected 'scheme://location' "
            "(e.g. 'warehouse://sales/daily', 's3://bucket/key', 'file:///data/x.csv')"
        )
    try:
        urlsplit(uri)
    except ValueError as exc:
        return f"{uri[:80]!r} is not an asset URI: {exc}"
    return None


class AssetCondition:
    """Base of every condition: ``a | b`` is :class:`AssetAny`, ``a & b`` :class:`AssetAll`."""

    def __or__(self, other: Any) -> AssetAny:
        if not isinstance(other, AssetCondition):
            return NotImplemented
        return AssetAny(self, other)

    def __and__(self, other: Any) -> AssetAll:
        if not isinstance(other, AssetCondition):
            return NotImplemented
        return AssetAll(self, other)

    def evaluate(self, present: set[str]) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def uris(self) -> tuple[str, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_data(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def missing(self, present: set[str]) -> tuple[str, ...]:
        """URIs without a queued event that the condition could still wait for.

        For ``AssetAll`` every absent member counts; for ``AssetAny`` (not yet true)
        the absent members of each alternative. Empty when the condition holds.
        """
        if self.evaluate(present):
            return ()
        return tuple(u for u in self.uris() if u not in present)


@dataclass(frozen=True, eq=False)
class AssetRef(AssetCondition):
    """A leaf: one asset, by URI (authoring's ``Asset`` is one with a name and group).

    Two leaves with the same URI are the same asset, whatever their class or name.
    """

    uri: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AssetRef) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(("asset", self.uri))

    def evaluate(self, present: set[str]) -> bool:
        return self.uri in present

    def uris(self) -> tuple[str, ...]:
        return (self.uri,)

    def describe(self) -> str:
        return self.uri

    def to_data(self) -> Any:
        return self.uri


class _Compound(AssetCondition):
    op = ""
    kind = ""

    def __init__(self, *objects: AssetCondition) -> None:
        items: list[AssetCondition] = []
        for o in objects:
            if not isinstance(o, AssetCondition):
                raise TypeError(
                    f"{type(self).__name__} takes assets or asset conditions, got {o!r}"
                )
            # a | b | c is one AssetAny of three, not nested pairs
            items.extend(o.objects if type(o) is type(self) else (o,))  # type: ignore[attr-defined]
        if not items:
            raise TypeError(f"{type(self).__name__} needs at least one asset")
        self.objects: tuple[AssetCondition, ...] = tuple(items)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.objects == self.objects  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.objects))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.objects))})"

    def uris(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u for o in self.objects for u in o.uris()))

    def describe(self) -> str:
        parts = [
            f"({o.describe()})" if isinstance(o, _Compound) and len(o.objects) > 1 else o.describe()
            for o in self.objects
        ]
        return f" {self.op} ".join(parts)

    def to_data(self) -> Any:
        return {self.kind: [o.to_data() for o in self.objects]}


class AssetAll(_Compound):
    """True when every member is: ``schedule=[a, b]`` or ``a & b``."""

    op = "&"
    kind = "all"

    def evaluate(self, present: set[str]) -> bool:
        return all(o.evaluate(present) for o in self.objects)


class AssetAny(_Compound):
    """True when at least one member is: ``a | b``."""

    op = "|"
    kind = "any"

    def evaluate(self, present: set[str]) -> bool:
        return any(o.evaluate(present) for o in self.objects)


def condition_from_data(data: Any) -> AssetCondition:
    """Rebuild a condition from :meth:`AssetCondition.to_data` (a URI, or {all|any: [...]})."""
    if isinstance(data, str):
        return AssetRef(data)
    if isinstance(data, dict) and len(data) == 1:
        ((kind, items),) = data.items()
        cls = {"all": AssetAll, "any": AssetAny}.get(kind)
        if cls is not None and isinstance(items, list):
            return cls(*(condition_from_data(i) for i in items))
    raise ValueError(f"not a stored asset condition: {data!r}")


@dataclass(frozen=True)
class QueuedEvent:
    """One event waiting in a DAG's queue: its id (arrival order) and asset URI."""

    event_id: int
    uri: str


def plan_asset_runs(
    condition: AssetCondition, queued: Sequence[QueuedEvent], policy: str
) -> list[list[QueuedEvent]]:
    """The event sets that each become one run, oldest first.

    * ``coalesce`` (the default) and ``skip``: if the condition holds on the whole
      queue, one run consumes every queued event; else nothing.
    * ``backfill``: the queue is replayed in arrival order; each shortest prefix on
      which the condition holds becomes a run (a | b with events a1, b1, a2 gives
      three runs; a & b with a1, a2, b1 gives one, consuming all three). Events left
      over keep waiting.

    (``skip`` drops the events queued while the DAG was paused when it is unpaused:
    see the store's unpause; what is queued afterwards is judged like ``coalesce``.)
    """
    events = sorted(queued, key=lambda e: e.event_id)
    if policy != "backfill":
        present = {e.uri for e in events}
        return [events] if events and condition.evaluate(present) else []
    runs: list[list[QueuedEvent]] = []
    group: list[QueuedEvent] = []
    present: set[str] = set()
    for e in events:
        group.append(e)
        present.add(e.uri)
        if condition.evaluate(present):
            runs.append(group)
            group, present = [], set()
    return runs


def all_of(items: Iterable[AssetCondition]) -> AssetCondition:
    """``schedule=[a, b]``: AssetAll of the items (one item stays itself)."""
    items = list(items)
    return items[0] if len(items) == 1 else AssetAll(*items)


# -- explaining what an asset-scheduled DAG waits for --------------------------------------
@dataclass(frozen=True)
class AssetWait:
    """What one asset of a DAG's asset schedule has: queued events, the last event."""

    uri: str
    name: str
    queued: int  # events queued for the DAG, not yet consumed
    first_queued_at: datetime | None
    last_event_at: datetime | None  # the asset's latest event, consumed or not

    def to_dict(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "name": self.name,
            "queued": self.queued,
            "first_queued_at": _iso(self.first_queued_at),
            "last_event_at": _iso(self.last_event_at),
        }


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def ago(then: datetime, now: datetime) -> str:
    """``5 s ago``, ``12 min ago``, ``3 h ago``, ``2 d ago``."""
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def _clock(at: datetime, now: datetime) -> str:
    """``10:02`` today (UTC), else ``2026-03-01 10:02``."""
    at = at.astimezone(UTC)
    same_day = at.date() == now.astimezone(UTC).date()
    return at.strftime("%H:%M") if same_day else at.strftime("%Y-%m-%d %H:%M")


def explain_waits(
    condition: AssetCondition, waits: Sequence[AssetWait], now: datetime
) -> tuple[bool, str]:
    """(met, text): ``waiting for costs: last event 3 h ago; sales arrived 10:02``."""
    present = {w.uri for w in waits if w.queued}
    arrived = [
        f"{w.name} arrived {_clock(w.first_queued_at, now)}"
        + (f" ({w.queued} events)" if w.queued > 1 else "")
        for w in waits
        if w.queued and w.first_queued_at is not None
    ]
    if condition.evaluate(present):
        text = f"{condition.describe()} is met ({'; '.join(arrived)}): a run is created at the next tick"
        return True, text
    missing = set(condition.missing(present))
    parts = [
        f"{w.name}: "
        + (f"last event {ago(w.last_event_at, now)}" if w.last_event_at else "no event yet")
        for w in waits
        if w.uri in missing
    ]
    text = ("waiting for one of " if isinstance(condition, AssetAny) else "waiting for ") + (
        ", ".join(parts)
    )
    if arrived:
        text += "; " + "; ".join(arrived)
    return False, text
