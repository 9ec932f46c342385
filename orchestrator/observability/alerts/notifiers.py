"""Sending one alert: webhook (HTTP POST of JSON, or of its rendered body template),
Slack (an incoming-webhook message), email (SMTP), Python callback.

Each ``send_*`` raises :class:`DeliveryError` on failure; the delivery loop retries.
Callbacks run in a child process that imports the DAG file, never in the scheduler.
"""

from __future__ import annotations

import json
import smtplib
import traceback
import urllib.error
import urllib.request
from email.message import EmailMessage
from multiprocessing.connection import Connection
from typing import Any

from orchestrator.authoring.alert_body import render_body
from orchestrator.authoring.context_names import alert_context
from orchestrator.observability.alerts.slack import slack_message
from orchestrator.settings import Settings


class DeliveryError(Exception):
    """One delivery attempt failed; ``retry`` says whether trying again may help."""

    def __init__(self, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


def send_webhook(
    url: str, payload: dict[str, Any], timeout: float, template: str | None = None
) -> None:
    """POST ``payload`` as JSON, or the ``template`` rendered with it (alert_body.py)."""
    if template is None:
        body = json.dumps(payload).encode()
    else:
        try:
            body = render_body(template, payload).encode()
        except ValueError as exc:
            raise DeliveryError(f"POST {url}: {exc}", retry=False) from None
    request = urllib.request.Request(
        url, data=body, method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "orchestrator-alerts/1"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            response.read()
    except urllib.error.HTTPError as exc:
        raise DeliveryError(
            f"POST {url}: HTTP {exc.code}", retry=exc.code >= 500 or exc.code == 429
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryError(f"POST {url}: {reason}") from None


def send_email(to: list[str], payload: dict[str, Any], settings: Settings) -> None:
    msg = EmailMessage()
    where = " ".join(str(payload[k]) for k in ("dag_id", "run_id", "task_id") if payload.get(k))
    msg["Subject"] = f"[orchestrator] {payload['kind']}: {where}"
    msg["From"] = settings.smtp_from
    msg["To"] = ", ".join(to)
    msg.set_content(f"{payload['message']}\n\n{json.dumps(payload, indent=2)}\n")
    try:
        with smtplib.SMTP(
            settings.smtp_host, settings.smtp_port, timeout=settings.alert_timeout
        ) as s:
            s.send_message(msg)
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"SMTP {settings.smtp_host}:{settings.smtp_port}: {exc}") from None


def callback_child(
    target: list[str], payload: dict[str, Any], conn: Connection, env_policy: Any = None
) -> None:
    """In a child process: import the DAG file and call the declared hook, with the
    environment a task gets (task_env_allow: the settings' secrets withheld)."""
    from orchestrator.engine.runner import _child_setup

    _child_setup()
    if env_policy is not None:
        env_policy.apply_to_this_process()
    fileloc, dag_id, task_id, hook = target
    try:
        from orchestrator.authoring.loader import load_file

        dags = {d.dag_id: d for d in load_file(fileloc)}
        owner: Any = dags[dag_id]
        dag = owner
        if task_id:
            owner = owner.tasks[task_id]
        # issue 25: the alert body with Airflow's context names beside it (ti, exception...)
        task = owner if task_id else None
        owner.callbacks[hook](alert_context(payload, dag, task))
        conn.send(None)
    except BaseException as exc:  # noqa: BLE001 - the user's error, reported back
        conn.send(f"{hook} raised {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    conn.close()


def send_callback(
    target: list[str], payload: dict[str, Any], timeout: float, env_policy: Any = None
) -> None:
    from orchestrator.engine.task_processes import mp_context

    ctx = mp_context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=callback_child, args=(target, payload, child, env_policy), daemon=True
    )
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise DeliveryError(f"callback {target[3]} took longer than {timeout}s: killed")
        error = parent.recv()
    except EOFError:
        raise DeliveryError(f"callback {target[3]}: its process died") from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
    if error:
        raise DeliveryError(error, retry=False)


def send(notifier: dict[str, Any], payload: dict[str, Any], settings: Settings) -> None:
    kind, target = notifier["kind"], notifier["target"]
    if kind == "webhook":
        send_webhook(target[0], payload, settings.alert_timeout, notifier.get("body"))
    elif kind == "slack":
        send_webhook(target[0], slack_message(payload), settings.alert_timeout)
    elif kind == "email":
        send_email(list(target), payload, settings)
    elif kind == "callback":
        from orchestrator.engine.taskenv import EnvPolicy

        policy = EnvPolicy.for_settings(settings)
        send_callback(list(target), payload, max(settings.alert_timeout, 30.0), policy)
    else:
        raise DeliveryError(f"unknown notifier {kind!r}", retry=False)
