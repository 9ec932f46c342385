"""``macros`` in templates: Airflow's ``airflow.macros`` names, for ``{{ macros.x }}``.

>>> MACROS.ds_add("2026-01-31", 1)
'2026-02-01'
>>> MACROS.ds_format("2026-01-31", "%Y-%m-%d", "%d/%m/%Y")
'31/01/2026'
>>> sorted(MACRO_NAMES)[:4]
['datetime', 'dateutil', 'ds_add', 'ds_format']
"""

from __future__ import annotations

import datetime as _dt
import random as _random
import time as _time
import uuid as _uuid
from types import SimpleNamespace
from typing import Any

import dateutil
import dateutil.parser
import dateutil.relativedelta
import dateutil.rrule
import dateutil.tz


def ds_add(ds: str, days: int) -> str:
    """``ds`` (``YYYY-MM-DD``) plus ``days`` (negative: minus): ``ds_add('2026-01-31', 1)``
    is ``'2026-02-01'``."""
    day = _dt.date.fromisoformat(str(ds))
    return (day + _dt.timedelta(days=int(days))).isoformat()


def ds_format(ds: str, input_format: str, output_format: str) -> str:
    """``ds`` read with ``input_format`` and written with ``output_format`` (strftime)."""
    return _dt.datetime.strptime(str(ds), input_format).strftime(output_format)


def _namespace() -> Any:
    return SimpleNamespace(
        ds_add=ds_add,
        ds_format=ds_format,
        datetime=_dt.datetime,
        timedelta=_dt.timedelta,
        dateutil=dateutil,  # with parser, relativedelta, rrule and tz imported
        time=_time,
        uuid=_uuid,
        random=_random.random,  # as Airflow's: macros.random() is a float in [0, 1)
    )


MACROS = _namespace()
MACRO_NAMES = frozenset(vars(MACROS))
