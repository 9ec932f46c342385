"""HTTP tasks (dag.http) end to end on both backends, against a real HTTP server on
127.0.0.1 started by the test: status codes, slow responses, a closed port, templated
URLs and bodies with hostile values, response_check, retries and the try's log."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

HOSTILE = 'x"}, "admin": true, {"y": "../../etc?a=1&b=2#frag\n$(id)\'`'


class Server:
    """A real HTTP server: ``/status/N`` answers N, ``/slow`` waits, others echo JSON."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                outer.requests.append(
                    {
                        "method": self.command,
                        "path": parts.path,
                        "raw_path": self.path,
                        "query": parse_qs(parts.query, keep_blank_values=True),
                        "headers": dict(self.headers),
                        "body": body.decode(),
                    }
                )
                if parts.path.startswith("/status/"):
                    code = int(parts.path.rsplit("/", 1)[1])
                    payload = b"plain text answer"
                    ctype = "text/plain"
                elif parts.path == "/big":
                    code, payload, ctype = 200, b"x" * 100_000, "text/plain"
                elif parts.path == "/slow":
                    time.sleep(3)
                    code, payload, ctype = 200, b"{}", "application/json"
                else:
                    code, ctype = 200, "application/json"
                    payload = json.dumps({"echo": body.decode(), "path": parts.path}).encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dag(body: str, params: str = "{}") -> str:
    return f"""
from datetime import timedelta
from orchestrator import DAG, task

with DAG("web", schedule=None, params={params}) as dag:
{body}
"""


def _run(harness, write_dag, source: str, conf: dict | None = None):
    write_dag("web.py", source)
    result = harness.parse()
    assert harness.store.import_errors() == [], result
    run = harness.store.trigger_run("web", harness.clock.now(), conf=conf or {})
    return harness.run_until_finished(run.run_id)


def _log(harness, run_id: str, task_id: str, try_number: int = 1) -> str:
    [tr] = [t for t in harness.store.tries(run_id, task_id) if t.try_number == try_number]
    return Path(harness.settings.log_dir, tr.log_path).read_text()


def test_a_post_with_a_templated_json_body_succeeds_and_its_json_answer_goes_downstream(
    harness, write_dag, server
):
    source = _dag(
        f"""
    notify = dag.http(
        "notify",
        "{server.base}/hook/{{{{ params.name }}}}?day={{{{ ds }}}}&who={{{{ params.name }}}}&token=s3cr3t",
        method="POST",
        headers={{"Authorization": "Bearer s3cr3t", "X-Run": "{{{{ run_id }}}}"}},
        json={{"name": "{{{{ params.name }}}}", "n": "{{{{ params.n }}}}", "fixed": [1, True]}},
    )

    @task
    def after(ctx):
        return ctx.upstream("notify")["path"]

    notify >> after
""",
        params='{"name": "plain", "n": 1}',
    )
    run = _run(harness, write_dag, source, conf={"name": HOSTILE, "n": 7})
    assert run.state == "success"
    [req] = server.requests
    # the hostile value stayed one path segment and one query value
    assert req["path"].startswith("/hook/") and req["path"].count("/") == 2
    assert req["query"]["who"] == [HOSTILE] and set(req["query"]) == {"day", "who", "token"}
    # and one JSON string: no key was injected, and "{{ params.n }}" kept its type
    assert json.loads(req["body"]) == {"name": HOSTILE, "n": 7, "fixed": [1, True]}
    assert req["headers"]["Authorization"] == "Bearer s3cr3t"
    assert req["headers"]["X-Run"] == run.run_id
    results = harness.store.results(run.run_id, ["notify", "after"])
    assert json.loads(results["after"]) == req["path"]
    assert json.loads(results["notify"]) == {"echo": req["body"], "path": req["path"]}
    log = _log(harness, run.run_id, "notify")
    assert "request: POST http://127.0.0.1:" in log
    assert "response: HTTP 200 OK" in log and "bytes" in log
    assert "s3cr3t" not in log  # neither the Authorization header nor the token query value
    assert "token=***" in log


@pytest.mark.parametrize(
    ("path", "kwargs", "error"),
    [
        ("/status/500", "", "HTTP 500 Internal Server Error: expected 200-299"),
        ("/status/404", "", "HTTP 404 Not Found: expected 200-299"),
        ("/status/204", "expect_status=[200, 201],", "HTTP 204 No Content: expected 200-201"),
        ("/slow", "timeout=timedelta(seconds=0.5),", "no response within 0.5 s (timeout)"),
    ],
)
def test_an_unexpected_status_or_a_timeout_fails_the_try_with_the_reason(
    harness, write_dag, server, path, kwargs, error
):
    source = _dag(f'    dag.http("call", "{server.base}{path}", {kwargs})')
    run = _run(harness, write_dag, source)
    assert run.state == "failed"
    ti = harness.store.task_instance(run.run_id, "call")
    assert ti.state == "failed" and error in ti.error


def test_a_closed_port_fails_every_try_and_is_retried_per_the_task_policy(harness, write_dag):
    port = _closed_port()
    source = _dag(
        f'    dag.http("call", "http://127.0.0.1:{port}/x", retries=2, retry_delay=timedelta(0))'
    )
    run = _run(harness, write_dag, source)
    tries = harness.store.tries(run.run_id, "call")
    assert run.state == "failed" and [t.try_number for t in tries] == [1, 2, 3]
    assert all(f"cannot connect to 127.0.0.1:{port}" in t.error for t in tries)


def test_a_non_json_answer_is_the_text_result_and_expect_status_accepts_a_code(
    harness, write_dag, server
):
    source = _dag(f'    dag.http("call", "{server.base}/status/202", expect_status=202)')
    run = _run(harness, write_dag, source)
    assert run.state == "success"
    [result] = harness.store.results(run.run_id, ["call"]).values()
    assert json.loads(result) == "plain text answer"


def test_a_body_over_max_result_bytes_fails_the_try_and_says_so(harness, write_dag, server):
    source = _dag(f'    dag.http("call", "{server.base}/big")')
    run = _run(harness, write_dag, source)
    ti = harness.store.task_instance(run.run_id, "call")
    assert ti.state == "failed"
    assert "over the 65536-byte limit (max_result_bytes)" in ti.error
    # issue 24 item 7: the body is read no further than the limit + 1 byte
    assert "reading stopped at 65537 bytes" in ti.error
    log = _log(harness, run.run_id, "call")
    assert "response: HTTP 200 OK, more than 65536 bytes (not read further)" in log


def test_response_check_decides_success_from_the_response(harness, write_dag, server):
    source = _dag(
        f"""
    def wants_echo(response):
        return response.json()["path"] == "/good"

    dag.http("good", "{server.base}/good", response_check=wants_echo)
    dag.http("bad", "{server.base}/bad", response_check=wants_echo)
    dag.http("raises", "{server.base}/x", response_check=lambda r, ctx: 1 / 0)
"""
    )
    run = _run(harness, write_dag, source)
    states = {t.task_id: t for t in harness.store.task_instances(run.run_id)}
    assert states["good"].state == "success"
    assert states["bad"].state == "failed"
    assert "response_check returned False for HTTP 200" in states["bad"].error
    assert "response_check raised ZeroDivisionError" in states["raises"].error


def test_a_form_body_and_a_header_that_renders_a_line_break(harness, write_dag, server):
    source = _dag(
        f"""
    dag.http("form", "{server.base}/f", method="PUT", data={{"q": "{{{{ params.v }}}}"}})
    dag.http("hdr", "{server.base}/h", headers={{"X-V": "{{{{ params.v }}}}"}})
""",
        params='{"v": "a&b=c\\r\\nX-Evil: 1"}',
    )
    run = _run(harness, write_dag, source)
    states = {t.task_id: t for t in harness.store.task_instances(run.run_id)}
    assert states["form"].state == "success"
    [form] = [r for r in server.requests if r["path"] == "/f"]
    assert parse_qs(form["body"]) == {"q": ["a&b=c\r\nX-Evil: 1"]}
    assert states["hdr"].state == "failed" and "holds a line break" in states["hdr"].error
    assert not [r for r in server.requests if r["path"] == "/h"]  # never sent


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ('"http://{{ params.host }}/x"', "must start with a literal http:// or https://"),
        ('"http://h{{ params.x }}/x"', "the host must be literal text"),
        ('"ftp://h/x"', "must start with a literal http:// or https://"),
        ('"http://h/x", method="BREW"', "method must be one of"),
        ('"http://h/x", json={"a": 1}, data={"b": 2}', "give json= or data=, not both"),
        ('"http://h/x", expect_status=999', "status codes are 100..599"),
        ('"http://h/{{ oops"', "bad template"),
        ('"http://h/x", headers={"Bad Name": "v"}', "is not a header name"),
    ],
)
def test_a_bad_http_task_is_an_import_error_naming_file_line_and_task(
    harness, write_dag, call, message
):
    write_dag("web.py", _dag(f"    dag.http('call', {call})"))
    harness.parse()
    [error] = harness.store.import_errors()
    assert "web.py:6" in error.message and "task 'call'" in error.message
    assert message in error.message


def test_tasks_test_sends_the_request_here(settings, write_dag, server, capsys):
    from orchestrator.engine.tasktest import run_task_test

    write_dag(
        "web.py",
        _dag(f'    dag.http("call", "{server.base}/t?x={{{{ params.x }}}}")', params='{"x": ""}'),
    )
    code = run_task_test(settings, "web", "call", None, {"x": "a b"})
    assert code == 0
    assert server.requests[0]["query"] == {"x": ["a b"]}
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["path"] == "/t"


@pytest.mark.parametrize("configured", [False, True])
def test_the_example_dag_calls_its_endpoint_or_skips_clearly(
    harness, write_dag, server, configured
):
    """dags/http_notify.py with HTTP_NOTIFY_URL set (a real server) and without."""
    source = (Path(__file__).resolve().parents[2] / "dags" / "http_notify.py").read_text()
    # parse processes keep the environment they started with: put the value in the file
    assert source.count('os.environ.get("HTTP_NOTIFY_URL")') == 1
    url = repr(f"{server.base}/health") if configured else "None"
    write_dag("http_notify.py", source.replace('os.environ.get("HTTP_NOTIFY_URL")', url))
    harness.parse()
    run = harness.store.trigger_run("http_notify", harness.clock.now())
    run = harness.run_until_finished(run.run_id)
    states = {t.task_id: t.state for t in harness.store.task_instances(run.run_id)}
    assert run.state == "success"
    if configured:
        assert states == {"endpoint": "success", "notify": "success"}
        assert {r["path"] for r in server.requests} == {"/health"}
        assert run.run_id in {r["query"]["run"][0] for r in server.requests}
    else:
        assert states == {"endpoint": "success", "notify": "skipped"}
        assert server.requests == []
        assert "set HTTP_NOTIFY_URL" in _log(harness, run.run_id, "endpoint")
