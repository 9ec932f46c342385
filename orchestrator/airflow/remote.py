"""Airflow's operators that reach past the task: ``TriggerDagRunOperator`` (over our
``trigger_dag``) and ``HttpOperator`` (a request to the host of an HTTP connection)::

    from orchestrator.airflow import HttpOperator, TriggerDagRunOperator

    post = HttpOperator(task_id="post", http_conn_id="api", endpoint="/orders/{{ ds }}",
                        method="POST", data={"day": "{{ ds }}"},
                        response_check=lambda r: r.json()["ok"])
    kick = TriggerDagRunOperator(task_id="kick", trigger_dag_id="report",
                                 conf={"day": "{{ ds }}"}, wait_for_completion=True)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from orchestrator.airflow import runtime
from orchestrator.airflow.exceptions import AirflowException
from orchestrator.airflow.operators import BaseOperator
from orchestrator.authoring.building import _active
from orchestrator.authoring.builtin_sensors import trigger_dag
from orchestrator.authoring.http_request import loggable_url
from orchestrator.authoring.task_node import Task
from orchestrator.authoring.where import caller, definition_error

__all__ = ["HttpOperator", "TriggerDagRunOperator", "http_request"]


class TriggerDagRunOperator(BaseOperator):
    """Airflow's ``TriggerDagRunOperator(trigger_dag_id=..., conf=...,
    wait_for_completion=..., poke_interval=..., allowed_states=..., failed_states=...)``:
    one run of the other DAG at this run's logical date, exactly once (a retry finds
    the run it made); with ``wait_for_completion`` it waits slot-free.

    >>> TriggerDagRunOperator(task_id="kick", trigger_dag_id="report")   # doctest: +SKIP
    """

    own_args = frozenset(
        {"trigger_dag_id", "conf", "wait_for_completion", "poke_interval", "allowed_states",
         "failed_states", "reset_dag_run", "deferrable", "logical_date", "trigger_run_id",
         "skip_when_already_exists", "fail_when_dag_is_paused"}
    )  # fmt: skip
    REFUSED = {
        "logical_date": "the triggered run gets this run's logical date",
        "trigger_run_id": "the run id derives from this task instance (exactly once)",
        "skip_when_already_exists": "a retried trigger finds the run it made already",
        "fail_when_dag_is_paused": "a run of a paused DAG waits until it is unpaused",
    }

    def __init__(
        self,
        *,
        trigger_dag_id: str,
        conf: dict[str, Any] | None = None,
        wait_for_completion: bool = False,
        poke_interval: float | timedelta = 60,
        allowed_states: Any = None,
        failed_states: Any = None,
        deferrable: bool = False,
        reset_dag_run: bool = False,
        **kwargs: Any,
    ) -> None:
        where = caller()
        for name, why in self.REFUSED.items():
            if kwargs.pop(name, None) not in (None, False):
                raise definition_error(
                    f"TriggerDagRunOperator {kwargs.get('task_id')!r}: {name}= is not "
                    f"supported here: {why}",
                    where,
                )
        self.trigger = {
            "conf": conf, "wait_for_completion": wait_for_completion,
            "allowed_states": allowed_states, "failed_states": failed_states,
            "reset_dag_run": reset_dag_run,
        }  # fmt: skip
        if wait_for_completion:
            self.trigger["poke_interval"] = poke_interval
        self.trigger_dag_id = trigger_dag_id
        super().__init__(**kwargs)  # deferrable: it waits slot-free whatever it says

    def _declare(self, dag: Any, task_id: str, options: dict[str, Any], where: Any) -> Task:
        if "timeout" in options:  # a try's time limit; a sensor's timeout is its wait
            options = dict(options)
            options["execution_timeout"] = options.pop("timeout")
        _active.append(dag)  # trigger_dag declares in the DAG being built
        try:
            return trigger_dag(task_id, self.trigger_dag_id, **self.trigger, **options)
        finally:
            _active.pop()


def _base_url(conn: Any) -> str:
    host = conn.host or ""
    if "://" in host:
        base = host
    else:
        scheme = conn.schema or "http"
        base = f"{scheme}://{host}"
        if conn.port:
            base += f":{conn.port}"
    return base.rstrip("/")


def http_request(
    conn_id: str,
    endpoint: str | None,
    method: str,
    data: Any,
    headers: dict[str, str] | None,
    extra_options: dict[str, Any] | None,
) -> Any:
    """One request to ``endpoint`` on connection ``conn_id``'s host (its login and
    password as basic auth, its extra as headers), as Airflow's HttpHook sends it."""
    import requests

    ctx, _task = runtime.running()
    conn = ctx.connection(conn_id)
    url = _base_url(conn)
    path = runtime.rendered_url(endpoint)  # values percent-encoded, as dag.http's
    if path:
        url = f"{url}/{path.lstrip('/')}"
    all_headers = {**{str(k): str(v) for k, v in (conn.extra or {}).items()}, **(headers or {})}
    auth = (conn.login, conn.password or "") if conn.login else None
    options = dict(extra_options or {})
    timeout = options.pop("timeout", 30)
    verify = options.pop("verify", True)
    if options:
        raise AirflowException(f"extra_options {sorted(options)} are not supported here")
    method = method.upper()
    payload: dict[str, Any] = {"params": data} if method == "GET" else {"data": data}
    if (
        method != "GET"
        and isinstance(data, dict | list)
        and "json" in str(all_headers.get("Content-Type", ""))
    ):
        payload = {"data": json.dumps(data)}
    ctx.log.info("%s %s", method, loggable_url(url))
    return requests.request(
        method, url, headers=all_headers, auth=auth, timeout=timeout, verify=verify, **payload
    )


class HttpOperator(BaseOperator):
    """Airflow's ``HttpOperator(http_conn_id=..., endpoint=..., method="POST", data=...,
    headers=..., response_check=..., response_filter=...)``: the host, port, scheme and
    basic auth come from the connection (read in the try, masked in its log); values in
    the templated ``endpoint`` are percent-encoded (they never change the URL's
    structure); the result is the response's text, or what
    ``response_filter(response)`` returns.

    >>> HttpOperator(task_id="get", http_conn_id="api", endpoint="/x", method="GET")  # doctest: +SKIP
    """

    template_fields = ("data", "headers")  # and endpoint, rendered as a URL's part
    own_args = frozenset(
        {"http_conn_id", "endpoint", "method", "data", "headers", "response_check",
         "response_filter", "extra_options", "log_response", "deferrable"}
    )  # fmt: skip

    def __init__(
        self,
        *,
        http_conn_id: str = "http_default",
        endpoint: str | None = None,
        method: str = "POST",
        data: Any = None,
        headers: dict[str, str] | None = None,
        response_check: Callable[..., Any] | None = None,
        response_filter: Callable[..., Any] | None = None,
        extra_options: dict[str, Any] | None = None,
        log_response: bool = False,
        deferrable: bool = False,
        **kwargs: Any,
    ) -> None:
        where = caller()
        if not isinstance(method, str) or method.upper() not in (
            "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS",
        ):  # fmt: skip
            raise definition_error(
                f"HttpOperator {kwargs.get('task_id')!r}: unknown method {method!r}", where
            )
        self.http_conn_id, self.endpoint, self.method = http_conn_id, endpoint, method
        self.data, self.headers, self.extra_options = data, headers, extra_options
        self.response_check, self.response_filter = response_check, response_filter
        self.log_response = log_response
        super().__init__(**kwargs)

    def execute(self, context: dict[str, Any]) -> Any:
        response = http_request(
            self.http_conn_id, self.endpoint, self.method, self.data, self.headers,
            self.extra_options,
        )  # fmt: skip
        if self.log_response:
            context["ti"].log.info("response: %s", response.text)
        if response.status_code >= 400:  # HttpHook's check_response, before the user's
            raise AirflowException(f"{response.status_code}:{response.reason}")
        check = self.response_check
        if check is not None and not runtime.call_with_context(check, (response,), {}, context):
            raise AirflowException("Response check returned False.")
        if self.response_filter is not None:
            return runtime.call_with_context(self.response_filter, (response,), {}, context)
        return response.text
