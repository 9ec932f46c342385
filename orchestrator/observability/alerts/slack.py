"""An alert as a Slack incoming-webhook message: ``text`` (the notification line) and
Block Kit ``blocks`` (a header, the ids as fields, the message, the alert's id and time).

Every value is escaped the way Slack asks (``&``, ``<``, ``>`` as entities), so an alert
whose message holds ``<!channel>`` or ``<https://evil|click>`` shows that text instead
of pinging a channel or linking, and every text is cut to Slack's limits.

>>> slack_message({"kind": "run_failed", "dag_id": "etl", "message": "<!channel> boom"})["text"]
'[orchestrator] run_failed: etl: &lt;!channel&gt; boom'
"""

from __future__ import annotations

from typing import Any

_FIELDS = (
    ("dag_id", "DAG"),
    ("run_id", "Run"),
    ("task_id", "Task"),
    ("try_number", "Try"),
    ("logical_date", "Logical date"),
)


def escape(text: Any) -> str:
    """Slack's escaping of mrkdwn text: ``&``, ``<`` and ``>`` as HTML entities."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slack_message(payload: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of the incoming-webhook request for an alert's ``payload``."""
    kind = str(payload.get("kind") or "alert")
    message = str(payload.get("message") or "")
    where = " ".join(str(payload[k]) for k in ("dag_id", "run_id", "task_id") if payload.get(k))
    text = f"[orchestrator] {kind}: " + (f"{where}: " if where else "") + message
    fields = [
        {"type": "mrkdwn", "text": _cut(f"*{label}*\n{escape(payload[key])}", 2000)}
        for key, label in _FIELDS
        if payload.get(key) is not None
    ]
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": _cut(f"orchestrator: {kind}", 150)},
        }
    ]
    if fields:
        blocks.append({"type": "section", "fields": fields})
    if message:
        shown = escape(message).replace("```", "'''")
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": "```" + _cut(shown, 2900) + "```"},
            }
        )
    context = " · ".join(
        escape(v)
        for v in (
            f"alert {payload['alert_id']}" if payload.get("alert_id") is not None else None,
            payload.get("created_at"),
        )
        if v
    )
    if context:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": context}]})
    return {"text": _cut(escape(text), 3000), "blocks": blocks}
