"""Airflow's task exceptions over our task controls (:class:`orchestrator.errors.Skip`,
:class:`orchestrator.errors.Fail`)::

    from orchestrator.airflow import AirflowSkipException

    @task
    def maybe(ds):
        if ds.endswith("-01"):
            raise AirflowSkipException("nothing on the first of the month")

``AirflowSkipException`` marks the try and the task skipped; ``AirflowFailException``
and ``AirflowSensorTimeout`` fail it with no retry, whatever retries are left;
``AirflowException`` (and anything else) is an ordinary failure, retried.
"""

from __future__ import annotations

from orchestrator.errors import Fail, Skip


class AirflowException(Exception):  # noqa: N818 - Airflow's name
    """Base of Airflow's exceptions: raised in a task, an ordinary (retried) failure.

    >>> raise AirflowException("upstream API down")  # doctest: +SKIP
    """


class AirflowSkipException(AirflowException, Skip):
    """Raise in a task to mark it skipped (its downstream follow by trigger rule).

    >>> raise AirflowSkipException("no file today")  # doctest: +SKIP
    """


class AirflowFailException(AirflowException, Fail):
    """Raise in a task to fail it now, with no retry.

    >>> raise AirflowFailException("bad input")  # doctest: +SKIP
    """


class AirflowSensorTimeout(AirflowException, Fail):
    """A sensor gave up: it fails with no retry (Airflow's meaning).

    >>> raise AirflowSensorTimeout("gave up")  # doctest: +SKIP
    """


__all__ = [
    "AirflowException",
    "AirflowFailException",
    "AirflowSensorTimeout",
    "AirflowSkipException",
]
