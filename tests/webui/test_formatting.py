"""Pure display helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from webui.formatting import duration, in_zone, iso, state_class, utc

AT = datetime(2026, 3, 29, 1, 30, tzinfo=UTC)  # 03:30 CEST, just after the DST switch


def test_times_in_zone_and_utc():
    assert in_zone(AT, "Europe/Berlin") == "2026-03-29 03:30 CEST"
    assert in_zone(AT - timedelta(hours=1), "Europe/Berlin") == "2026-03-29 01:30 CET"
    assert in_zone(AT, "America/New_York", seconds=True) == "2026-03-28 21:30:00 EDT"
    assert in_zone(AT, "Not/AZone") == "2026-03-29 01:30 UTC"
    assert utc(AT) == "2026-03-29 01:30 UTC"
    assert iso(AT) == "2026-03-29T01:30:00+00:00"
    assert in_zone(None, "UTC") == utc(None) == ""
    assert iso(None) is None


def test_state_class_only_names_known_states():
    assert state_class("success") == "state-success"
    assert state_class("up_for_retry") == "state-up_for_retry"
    assert state_class('x" onmouseover="y') == "state-unknown"
    assert state_class(None) == "state-unknown"


def test_duration():
    assert duration(AT, AT + timedelta(seconds=4)) == "4s"
    assert duration(AT, AT + timedelta(minutes=2, seconds=5)) == "2m 05s"
    assert duration(AT, AT + timedelta(hours=1, seconds=63)) == "1h 01m 03s"
    assert duration(AT, None) == ""
