"""Pure display helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from webui.formatting import (
    ago,
    ago_tag,
    duration,
    in_zone,
    iso,
    seconds_text,
    stamps,
    state_class,
    time_tag,
    utc,
)

AT = datetime(2026, 3, 29, 1, 30, tzinfo=UTC)  # 03:30 CEST, just after the DST switch


def test_times_in_zone_and_utc():
    assert in_zone(AT, "Europe/Berlin") == "2026-03-29 03:30:00 CEST"
    assert in_zone(AT - timedelta(hours=1), "Europe/Berlin") == "2026-03-29 01:30:00 CET"
    assert in_zone(AT, "America/New_York") == "2026-03-28 21:30:00 EDT"
    assert in_zone(AT, "Not/AZone") == "2026-03-29 01:30:00 UTC"
    assert utc(AT) == "2026-03-29 01:30:00 UTC"
    assert iso(AT) == "2026-03-29T01:30:00+00:00"
    assert in_zone(None, "UTC") == utc(None) == ""
    assert iso(None) is None


def test_state_class_only_names_known_states():
    assert state_class("success") == "state-success"
    assert state_class("up_for_retry") == "state-up_for_retry"
    assert state_class('x" onmouseover="y') == "state-unknown"
    assert state_class(None) == "state-unknown"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 ms"),
        (-3, "0 ms"),  # a clock step backwards never shows a negative duration
        (0.0004, "0 ms"),
        (0.0005, "1 ms"),
        (0.038, "38 ms"),
        (0.9994, "999 ms"),
        (0.9995, "1.0 s"),  # rounds up into the next unit, never "1000 ms"
        (1, "1.0 s"),
        (1.24, "1.2 s"),
        (1.25, "1.3 s"),
        (9.94, "9.9 s"),
        (9.95, "10 s"),  # never "10.0 s"
        (42.4, "42 s"),
        (59.4, "59 s"),
        (59.5, "1 m 00 s"),  # never "60 s"
        (60, "1 m 00 s"),
        (184, "3 m 04 s"),
        (3599.4, "59 m 59 s"),
        (3599.5, "1 h 00 m"),  # never "60 m 00 s"
        (7800, "2 h 10 m"),
        (7829, "2 h 10 m"),
        (7830, "2 h 11 m"),
        (86369, "23 h 59 m"),
        (86370, "1 d 00 h"),
        (3 * 86400 + 4 * 3600, "3 d 04 h"),
        (timedelta(minutes=3, seconds=4), "3 m 04 s"),
        (None, ""),
    ],
)
def test_seconds_text_at_every_boundary(seconds, text):
    assert seconds_text(seconds) == text


def test_duration():
    assert duration(AT, AT + timedelta(milliseconds=38)) == "38 ms"  # was "0s"
    assert duration(AT, AT + timedelta(seconds=4)) == "4.0 s"
    assert duration(AT, AT + timedelta(minutes=2, seconds=5)) == "2 m 05 s"
    assert duration(AT, AT + timedelta(hours=1, seconds=63)) == "1 h 01 m"
    assert duration(AT, None) == duration(None, AT) == ""


def test_time_tag_shows_the_zone_and_utc_on_hover():
    html = str(time_tag(AT, "Europe/Berlin"))
    assert html == (
        '<time datetime="2026-03-29T01:30:00+00:00" title="2026-03-29 01:30:00 UTC">'
        "2026-03-29 03:30:00 CEST</time>"
    )
    assert ">2026-03-29 01:30:00 UTC<" in str(time_tag(AT))
    assert str(time_tag(None, "UTC")) == ""


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(0), "just now"),
        (timedelta(seconds=9), "just now"),
        (timedelta(seconds=45), "45 s ago"),
        (timedelta(minutes=3, seconds=59), "3 min ago"),
        (timedelta(hours=2, minutes=59), "2 h ago"),
        (timedelta(days=5, hours=1), "5 d ago"),
        (timedelta(minutes=-3), "in 3 min"),
    ],
)
def test_ago(delta, text):
    assert ago(AT - delta, AT) == text


def test_ago_tag_has_the_full_time_on_hover():
    html = str(ago_tag(AT - timedelta(minutes=3), AT, "Europe/Berlin"))
    assert ">3 min ago</time>" in html
    assert 'title="2026-03-29 03:27:00 CEST · 2026-03-29 01:27:00 UTC"' in html
    assert ago(None, AT) == str(ago_tag(None, AT)) == ""


def test_stamps_in_an_explainer_message_show_in_the_zone_and_stay_escaped():
    from orchestrator.clock import stamp

    message = f"<b>retry</b> backoff until {stamp(AT)}; 2026-13-99 is no time"
    html = str(stamps(message, "Europe/Berlin"))
    assert html.startswith("&lt;b&gt;retry&lt;/b&gt; backoff until <time ")
    assert 'title="2026-03-29 01:30:00 UTC">2026-03-29 03:30:00 CEST</time>' in html
    assert html.endswith("; 2026-13-99 is no time")
    assert stamp(AT) == utc(AT)  # the explainer's format is the pages' format
