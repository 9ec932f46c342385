"""XSS: hostile text in every field a user or task controls is rendered inert.

Checked here on the HTML (escaped, no live markup); tests/webui/test_browser.py
opens the same pages in chromium and checks no dialog fires and nothing is injected.
"""

from __future__ import annotations

import json
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

from conftest import START  # noqa: I001

from orchestrator import DAG, task
from orchestrator.authoring.spec import serialize_dag

PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "'><svg onload=alert(3)>",
    "<iframe src=javascript:alert(4)>",
    "<body onload=alert(5)>",
    "javascript:alert(6)",
    "<a href=javascript:alert(7)>x</a>",
    "</textarea><script>alert(8)</script>",
    "</title><script>alert(9)</script>",
    "<img src=x onerror=&#97;lert(10)>",
    '<div style="background:url(javascript:alert(11))">',
    "<details open ontoggle=alert(12)>",
    "{{7*7}}<b>ssti</b>",
    "<math><mtext><script>alert(13)</script>",
    '"onmouseover="alert(14)',
    "'onfocus='alert(15)' autofocus='",
    "<svg><script>alert(16)</script></svg>",
    "<input autofocus onfocus=alert(17)>",
    "</pre><script>alert(18)</script>",
    "<object data=javascript:alert(19)>",
    "<embed src=javascript:alert(20)>",
    "<marquee onstart=alert(21)>",
    "]]><script>alert(22)</script>",
    "</code></td><script>alert(23)</script>",
]
# dag and task ids only allow [A-Za-z0-9_.-]: the worst they can hold is still tested
ID_PAYLOAD = "x.-_javascript-alert-1"
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "link", "script", "body", "header", "nav", "main",
    "a", "form", "input", "button", "span", "div", "p", "h1", "h2", "table", "thead",
    "tbody", "tr", "th", "td", "code", "pre", "dl", "dt", "dd", "details", "summary",
    "label", "select", "option", "textarea", "section", "ol", "ul", "li", "time", "strong",
    "svg", "defs", "marker", "path", "g", "rect", "text", "line", "tspan",
}  # fmt: skip


SCRIPTS = ("/static/app.js", "/static/theme.js", "/static/graph_view.js")


class Markup(HTMLParser):
    """Every element and attribute actually in the page (not text that looks like them)."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag not in ALLOWED_TAGS:
            self.problems.append(f"<{tag}>")
        if tag == "script" and dict(attrs).get("src") not in SCRIPTS:
            self.problems.append("inline <script>")
        for name, value in attrs:
            if name.startswith("on") or name in ("style", "autofocus", "srcdoc"):
                self.problems.append(f"<{tag} {name}=...>")
            if name in ("href", "src", "action") and (value or "").lower().startswith(
                "javascript:"
            ):
                self.problems.append(f"<{tag} {name}={value}>")


def live_markup(html: str) -> list[str]:
    parser = Markup()
    parser.feed(html)
    return parser.problems


def hostile_dag(dag_id: str) -> dict:
    with DAG(
        dag_id,
        schedule=None,
        description=" ".join(PAYLOADS[:12]),
        tags=PAYLOADS[12:18],
        params={p: p for p in PAYLOADS[18:]},
    ) as dag:

        @task(description=PAYLOADS[5])
        def extract(ctx):
            return 1

        shell = dag.shell("shell_" + ID_PAYLOAD.replace(".", "_"), "echo {{ params }}")
        extract >> shell
    return serialize_dag(dag)


def seed(store, settings) -> str:
    """A DAG, a run, a try, a log, a result, an error and events full of payloads."""
    store.save_dag(hostile_dag(ID_PAYLOAD), START)
    conf = {p: p for p in PAYLOADS[18:]}
    run = store.trigger_run(ID_PAYLOAD, START, conf=conf)
    store.start_queued_runs(START)
    store.release_ready(START)
    [claim] = store.claim("<b>worker</b>", START, timedelta(seconds=30), limit=1)
    path = Path(settings.log_dir) / claim.log_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(PAYLOADS))
    store.finish_success(claim, json.dumps(PAYLOADS), START + timedelta(seconds=1))
    store.release_ready(START + timedelta(seconds=2))
    [claim2] = store.claim("w2", START + timedelta(seconds=3), timedelta(seconds=30), limit=1)
    store.finish_failure(claim2, "\n".join(PAYLOADS), 1, START + timedelta(seconds=4))
    store.record_import_error("/dags/" + PAYLOADS[0] + ".py", PAYLOADS[1], PAYLOADS[2], START)
    return run.run_id


def pages(run_id: str) -> list[str]:
    shell = "shell_" + ID_PAYLOAD.replace(".", "_")
    return [
        "/",
        f"/?tag={PAYLOADS[12]}",
        f"/?q={PAYLOADS[0]}",
        f"/dags/{ID_PAYLOAD}",
        f"/runs/{run_id}",
        f"/runs/{run_id}/tasks/extract",
        f"/runs/{run_id}/tasks/{shell}",
        "/events",
        f"/events?kind={PAYLOADS[1]}&dag_id={PAYLOADS[2]}",
        "/import-errors",
    ]


def test_at_least_twenty_payloads():
    assert len(set(PAYLOADS)) >= 20


def test_every_payload_is_escaped_on_every_page(client, store, settings):
    run_id = seed(store, settings)
    shown = set()
    for url in pages(run_id):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.get_data(as_text=True)
        assert live_markup(html) == [], url
        for p in PAYLOADS:
            if any(c in p for c in "<>\"'") and p in html:
                raise AssertionError(f"{url}: unescaped {p!r}")
        shown |= {p for p in PAYLOADS if _escaped(p) in html}
    assert len(shown) >= 20, sorted(set(PAYLOADS) - shown)


def _escaped(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


def test_the_api_returns_payloads_as_plain_json_strings(client, store, settings):
    run_id = seed(store, settings)
    response = client.get(f"/api/v1/runs/{run_id}/tasks/extract")
    assert response.mimetype == "application/json"
    assert json.loads(response.get_json()["result"]) == PAYLOADS


def test_the_checker_sees_live_markup():
    assert live_markup('<p><img src=x onerror="alert(1)"></p>') == ["<img>", "<img onerror=...>"]
    assert live_markup("<p>&lt;img src=x onerror=alert(1)&gt;</p>") == []
