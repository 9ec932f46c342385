"""The Slack notifier and the webhook's body template, delivered to a real HTTP listener
(http.server in a thread), with hostile values in the alert payload."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from orchestrator.errors import NotFoundError
from orchestrator.observability.alerts.delivery import AlertDelivery
from orchestrator.observability.alerts.watchdog import AlertWatchdog, settings_notifiers

# would ping a channel, link, break out of a JSON string or be read as template syntax
HOSTILE = '<!channel> <https://evil.example|click> "q", "admin": true} {{ 7*7 }} {% raw %} ``` & \\'


class Listener:
    """An HTTP server on 127.0.0.1 keeping each POST's raw body and headers."""

    def __init__(self) -> None:
        self.posts: list[tuple[dict[str, str], bytes]] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                listener.posts.append((dict(self.headers), body))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def bodies(self) -> list[dict]:
        return [json.loads(body) for _, body in self.posts]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener():
    r = Listener()
    yield r
    r.close()


def _fail_and_deliver(harness, settings, write_dag, alerts: str) -> None:
    write_dag(
        "bad.py",
        f"""
        from orchestrator import DAG, task
        from orchestrator.alerts import slack, webhook

        with DAG("bad", schedule=None, alerts=[{alerts}]) as dag:
            @task
            def boom():
                raise RuntimeError({HOSTILE!r})
        """,
    )
    assert harness.parse().errors == 0
    watchdog, delivery = (
        AlertWatchdog(harness.store, settings),
        AlertDelivery(harness.store, settings),
    )
    watchdog.check(harness.clock.now())
    run = harness.store.trigger_run("bad", harness.clock.now())
    harness.run_until_finished(run.run_id)
    assert sorted(a.kind for a in watchdog.check(harness.clock.now())) == [
        "run_failed",
        "task_dead_lettered",
    ]
    assert delivery.tick(harness.clock.now()) == 2
    states = [
        d["state"] for a in harness.store.list_alerts() for d in harness.store.deliveries(a.id)
    ]
    assert states == ["delivered", "delivered"]


def test_slack_gets_text_and_blocks_with_every_value_escaped(
    harness, settings, write_dag, listener
):
    _fail_and_deliver(harness, settings, write_dag, f"slack({listener.url!r})")
    [dead] = [b for b in listener.bodies() if "task_dead_lettered" in b["text"]]
    assert set(dead) == {"text", "blocks"}
    assert dead["text"].startswith("[orchestrator] task_dead_lettered: bad ")
    header, fields, message, context = dead["blocks"]
    assert header == {
        "type": "header",
        "text": {"type": "plain_text", "text": "orchestrator: task_dead_lettered"},
    }
    assert [f["text"].split("\n")[0] for f in fields["fields"]] == [
        "*DAG*",
        "*Run*",
        "*Task*",
        "*Try*",
        "*Logical date*",
    ]
    assert fields["fields"][2]["text"] == "*Task*\nboom"
    shown = message["text"]["text"]
    assert shown.startswith("```") and shown.endswith("```")
    assert context["type"] == "context"
    # no mention, no link, the code block not closed early; the rest shown as it was
    everything = json.dumps(dead)
    assert "<!channel>" not in everything and "<https://" not in everything
    assert "&lt;!channel&gt; &lt;https://evil.example|click&gt;" in shown
    assert '"q", "admin": true} {{ 7*7 }} {% raw %}' in shown
    assert "```" not in shown[3:-3] and "&amp; \\" in shown
    assert "&lt;!channel&gt;" in dead["text"]
    headers = listener.posts[0][0]
    assert headers["Content-Type"] == "application/json"


BODY = (
    '{"text": {{ "[" ~ kind ~ "] " ~ message }}, "dag": {{ dag_id }},'
    ' "try": {{ try_number }}, "id": {{ alert.alert_id }}}'
)


def test_a_webhook_body_template_writes_values_as_json_never_as_syntax(
    harness, settings, write_dag, listener
):
    _fail_and_deliver(harness, settings, write_dag, f"webhook({listener.url!r}, body={BODY!r})")
    bodies = listener.bodies()
    assert all(set(b) == {"text", "dag", "try", "id"} for b in bodies)  # no key injected
    [dead] = [b for b in bodies if b["text"].startswith("[task_dead_lettered] ")]
    assert HOSTILE in dead["text"]  # verbatim: {{ 7*7 }} was not evaluated, quotes kept
    assert "49" not in dead["text"]
    assert dead["dag"] == "bad" and dead["try"] == 1 and isinstance(dead["id"], int)
    [failed] = [b for b in bodies if b["text"].startswith("[run_failed] ")]
    assert failed["try"] is None


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"text": {{ message }', "body template, line 1: unexpected '}'"),
        ('{"a": 1,\n "text": {{ message | nosuchfilter }}}', "body template, line 2"),
        ('{"text": {{ nosuchname }}}', "'nosuchname' is undefined"),
        ('{"text": "{{ message }}"}', "does not render JSON"),
        ('{"x": {{ message.__class__.__mro__ }}}', "access to attribute '__class__'"),  # sandboxed
        ("", "body must be a non-empty template string"),
    ],
)
def test_a_bad_body_template_is_an_import_error_naming_file_and_line(
    harness, write_dag, body, reason
):
    path = write_dag(
        "bad_body.py",
        f"""
        from orchestrator import DAG, task
        from orchestrator.alerts import webhook

        HOOK = webhook("http://127.0.0.1:9/hook",
                       body={body!r})

        with DAG("bad_body", schedule=None, alerts=[HOOK]) as dag:
            @task
            def t():
                return 1
        """,
    )
    result = harness.parse()
    assert result.errors == 1
    [error] = harness.store.import_errors()
    assert f"{path.name}:5: webhook 'http://127.0.0.1:9/hook': " in error.message
    assert reason in error.message
    with pytest.raises(NotFoundError):
        harness.store.get_dag("bad_body")


def test_slack_from_the_settings_and_declarations_that_are_refused(settings):
    assert settings_notifiers(
        settings.with_(alert_slack="https://hooks.slack.com/services/T/B/x")
    ) == [
        {
            "kind": "slack",
            "target": ["https://hooks.slack.com/services/T/B/x"],
            "events": list(settings_notifiers.__globals__["am"].ALERT_KINDS),
        }
    ]
    from orchestrator.authoring.alerts import parse_notifier

    with pytest.raises(ValueError, match="slack alert needs an http"):
        parse_notifier({"kind": "slack", "target": "hooks.slack.com/x"})
    with pytest.raises(ValueError, match="only a webhook takes a body template"):
        parse_notifier({"kind": "slack", "target": "https://x", "body": "{}"})


def test_a_callback_gets_the_environment_a_task_gets(harness, settings, write_dag, tmp_path):
    """A DAG's on_failure hook is user code too: it runs with the task environment's
    allow-list, not the alert loop's whole environment."""
    out = tmp_path / "env.json"
    write_dag(
        "cb.py",
        f"""
        import json, os
        from orchestrator import DAG, task

        def on_failure(alert):
            with open({str(out)!r}, "w") as f:
                json.dump(sorted(os.environ), f)

        with DAG("cb", schedule=None, on_failure=on_failure) as dag:
            @task
            def boom():
                raise RuntimeError("x")
        """,
    )
    assert harness.parse().errors == 0
    narrow = settings.with_(task_env_allow="PATH,NO_SUCH_VAR")
    watchdog, delivery = AlertWatchdog(harness.store, narrow), AlertDelivery(harness.store, narrow)
    watchdog.check(harness.clock.now())
    run = harness.store.trigger_run("cb", harness.clock.now())
    harness.run_until_finished(run.run_id)
    watchdog.check(harness.clock.now())
    assert delivery.tick(harness.clock.now()) == 1
    assert set(json.loads(out.read_text())) <= {"PATH"}
