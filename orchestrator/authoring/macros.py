"""``macros`` in templates: Airflow's ``airflow.macros`` names, for ``{{ macros.x }}``.

``macros.time``, ``macros.uuid`` and ``macros.dateutil`` hold those modules' functions
and classes (``macros.uuid.uuid4()``, ``macros.dateutil.parser.parse(ds)``), not the
modules: a module's attributes (``uuid.os``) would let a template run anything, in
every process that renders one (the web server's task page among them).

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


def _functions(module: Any, names: str) -> SimpleNamespace:
    """A namespace of some of ``module``'s names: never the module itself, whose other
    attributes (``uuid.os``...) would reach past the template sandbox."""
    return SimpleNamespace(**{name: getattr(module, name) for name in names.split()})


def _namespace() -> Any:
    dateutil_ns = SimpleNamespace(
        parser=_functions(dateutil.parser, "parse isoparse"),
        relativedelta=_functions(dateutil.relativedelta, "relativedelta MO TU WE TH FR SA SU"),
        rrule=_functions(
            dateutil.rrule,
            "rrule rruleset rrulestr YEARLY MONTHLY WEEKLY DAILY HOURLY MINUTELY SECONDLY",
        ),
        tz=_functions(dateutil.tz, "gettz tzutc tzlocal tzoffset UTC"),
    )
    return SimpleNamespace(
        ds_add=ds_add,
        ds_format=ds_format,
        datetime=_dt.datetime,
        timedelta=_dt.timedelta,
        dateutil=dateutil_ns,  # parser, relativedelta, rrule, tz
        time=_functions(_time, "time time_ns gmtime localtime mktime strftime strptime monotonic"),
        uuid=_functions(_uuid, "uuid1 uuid3 uuid4 uuid5 UUID NAMESPACE_DNS NAMESPACE_URL"),
        random=_random.random,  # as Airflow's: macros.random() is a float in [0, 1)
    )


MACROS = _namespace()
MACRO_NAMES = frozenset(vars(MACROS))
