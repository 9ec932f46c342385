"""The task page and the Gantt chart from a real run (issue 27 items 4 and 6): a task that
fails once in the user's own code and is retried after a back-off, a task group and a
mapped task, run by the real scheduler and worker on the fake clock."""

from __future__ import annotations

import html as html_lib
import re
from datetime import timedelta

import pytest

from orchestrator.scheduling.retry import RetryPolicy
from orchestrator.store.tasks.task_store import idempotency_key
from tests.helpers import Harness
from tests.webui.test_mapped_pages import mapped_run  # noqa: F401

SOURCE = """
from datetime import timedelta

from orchestrator import DAG, TaskGroup, task


def parse_rows(text):
    return int(text)  # the user's line that raises


with DAG("flaky_ui", schedule=None, timezone="Europe/Berlin") as dag:
    @task
    def extract(ctx):
        return {"rows": 3, "note": "x" * 2000}

    @task(retries=1, retry_delay=timedelta(seconds=5))
    def load(ctx):
        if ctx.try_number == 1:
            parse_rows("<script>alert(1)</script>")
        return ctx.upstream("extract")["rows"]

    with TaskGroup("report"):
        @task
        def summary(ctx):
            return 1

        @task
        def numbers(ctx):
            return [1, 2, 3]

        @task
        def square(ctx, n):
            return n * n

        square.expand(n=numbers)

    extract >> load
"""


@pytest.fixture
def flaky_run(store, settings, clock, write_dag):
    write_dag("flaky_ui.py", SOURCE)
    harness = Harness(store, settings, clock)
    try:
        harness.parse()
        run = store.trigger_run("flaky_ui", clock.now())
        harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    return store.get_run(run.run_id)


def line_of(text: str) -> int:
    """The line of SOURCE (as written into the DAG file) that holds ``text``."""
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if text in line)


def bars(page: str, task_id: str) -> list[tuple[str, float, float, str]]:
    """(kind, x, width, title) of each segment in ``task_id``'s Gantt row."""
    row = re.search(
        rf'<g class="gantt-row [^"]*" data-task-id="{re.escape(task_id)}".*?</g>', page, re.S
    )
    assert row, f"no Gantt row for {task_id}"
    return [
        (kind, float(x), float(w), html_lib.unescape(title))
        for kind, x, w, title in re.findall(
            r'<rect class="bar bar-([a-z]+)[^"]*" x="([\d.]+)" y="5" width="([\d.]+)"[^>]*>'
            r"<title>([^<]*)</title>",
            row.group(0),
        )
    ]


def test_the_error_shows_the_users_frame_first_and_the_rest_behind_a_toggle(client, flaky_run):
    page = client.get(f"/runs/{flaky_run.run_id}/tasks/load").get_data(as_text=True)
    panel = page.split('id="try-error-1"', 1)[1].split("</details>", 1)[0]
    head, rest = panel.split('<ol class="frames"', 1)
    assert "ValueError: invalid literal for int() with base 10:" in head
    frames, full = rest.split('<details class="full-traceback">', 1)
    where = re.findall(r'<div class="frame-where"><code>([^<]+)</code>, line (\d+)', frames)
    # innermost first: the user's line that raised, then the task that called it
    assert [(path.rsplit("/", 1)[-1], int(line)) for path, line in where] == [
        ("flaky_ui.py", line_of("return int(text)")),
        ("flaky_ui.py", line_of('parse_rows("<script>')),
    ]
    assert "in <code>parse_rows</code>" in frames.split("</li>")[0]
    assert "return int(text)  # the user&#39;s line that raises" in frames.split("</li>")[0]
    assert "in <code>load</code>" in frames.split("</li>")[1]
    assert "runner.py" not in frames  # the orchestrator's own frames are not among them
    # the full traceback is behind the toggle, the orchestrator's frames in it
    assert "Show full traceback (" in full and "of the orchestrator)" in full
    assert "orchestrator/engine/runner.py" in full
    # hostile text from the error is escaped, never markup
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_each_try_has_its_tab_with_state_duration_worker_and_exit_reason(client, flaky_run):
    page = client.get(f"/runs/{flaky_run.run_id}/tasks/load").get_data(as_text=True)
    tabs = re.findall(r'<button type="button" role="tab" class="log-tab" id="log-tab-(\d)"', page)
    assert tabs == ["1", "2"]
    one = page.split('id="try-facts-1"', 1)[1].split('id="try-facts-2"', 1)[0]
    two = page.split('id="try-facts-2"', 1)[1].split('<h2 class="log-title">', 1)[0]
    assert '<dd class="exit-reason">failed, retried</dd>' in one
    assert '<dd class="exit-reason">succeeded</dd>' in two
    assert "<code>test-worker</code>" in one and "<code>test-worker</code>" in two
    assert re.search(r"<dt>Duration</dt><dd>\d+ ms</dd>", one)  # a real, sub-second try
    assert 'id="try-error-1"' in one and 'id="try-error-2"' not in page  # try 2 had none
    # the summary table says the same, and stays in its card (a scrolling wrapper)
    table = page.split('<div class="table-wrap">', 1)[1].split("</table>", 1)[0]
    assert re.findall(r'<td class="exit-reason">([^<]*)</td>', table) == [
        "failed, retried",
        "succeeded",
    ]
    api = client.get(f"/api/v1/runs/{flaky_run.run_id}/tasks/load").get_json()
    assert [t["exit_reason"] for t in api["tries"]] == ["failed, retried", "succeeded"]


def test_no_lease_is_shown_once_the_try_ended(client, flaky_run, store):
    ti = store.task_instance(flaky_run.run_id, "load")
    assert ti.state == "success"
    page = client.get(f"/runs/{flaky_run.run_id}/tasks/load").get_data(as_text=True)
    assert "<dt>Lease</dt>" not in page


def test_a_running_task_still_shows_its_lease(client, store, worked_run):
    run = worked_run()
    archive = store.task_instance(run.run_id, "archive")
    assert archive.state == "running" and archive.owner == "worker-1"
    page = client.get(f"/runs/{run.run_id}/tasks/archive").get_data(as_text=True)
    assert "<dt>Lease</dt><dd><code>worker-1</code> until" in page


def test_results_show_their_size(client, flaky_run):
    page = client.get(f"/runs/{flaky_run.run_id}/tasks/load").get_data(as_text=True)
    # extract's result as load received it: {"rows": 3, "note": "xxx..."} is 2.0 KiB
    assert re.search(r'</code> <span class="muted small result-size">2\.0 KiB</span>', page)
    assert '<span class="muted small result-size">1 B</span>' in page  # load's own: 3


def test_the_gantt_draws_the_retry_back_off_apart_from_queued_time(client, flaky_run, store):
    page = client.get(f"/runs/{flaky_run.run_id}").get_data(as_text=True)
    load = bars(page, "load")
    kinds = [b[0] for b in load]
    # (no queued time before the first try: the fake clock stands still while it runs)
    assert kinds == ["running", "backoff", "queued", "running"]
    tries = store.tries(flaky_run.run_id, "load")
    policy = RetryPolicy(retries=1, retry_delay=timedelta(seconds=5))
    delay = policy.delay_after(1, idempotency_key("flaky_ui", flaky_run.run_id, "load"))
    assert timedelta(seconds=5) <= delay < timedelta(seconds=10)
    backoff = load[kinds.index("backoff")]
    first_run = load[kinds.index("running")]
    assert backoff[1] == pytest.approx(first_run[1] + first_run[2], abs=2.01)  # from its end
    # the back-off lasts the delay the store waited: the retry was not claimable before
    assert tries[1].start_date >= tries[0].end_date + delay
    seconds = float(re.search(r'data-seconds="([\d.]+)"', page).group(1))
    assert backoff[2] == pytest.approx(delay.total_seconds() * 640 / seconds, rel=0.01)
    assert backoff[3].startswith("load: waiting for retry ")
    assert 'class="bar bar-backoff state-up_for_retry"' in page


def test_the_gantt_has_round_ticks_and_a_wall_clock_axis(client, flaky_run):
    page = client.get(f"/runs/{flaky_run.run_id}").get_data(as_text=True)
    labels = re.findall(r'<text class="tick-label" x="[\d.]+" y="12">([^<]+)</text>', page)
    assert labels[0] == "0 s" and all(re.fullmatch(r"\d+ s", t) for t in labels)
    steps = {
        int(b.split()[0]) - int(a.split()[0]) for a, b in zip(labels, labels[1:], strict=False)
    }
    assert len(steps) == 1
    step = steps.pop()
    assert step in (1, 2, 5, 10, 15, 30)
    assert '<text class="clock-zone" x="4" y="14">Europe/Berlin</text>' in page
    # the run started at 2026-01-01 00:00 UTC: 01:00 in Berlin, ticks on round seconds
    clock = re.findall(r'<text class="clock-label" x="[\d.]+" y="15">([^<]+)</text>', page)
    assert clock and all(re.fullmatch(r"01:00:\d\d", t) for t in clock)
    assert all(int(t[-2:]) % step == 0 for t in clock)


def test_the_gantt_has_group_rows_and_a_mapped_tasks_instances(client, flaky_run):
    page = client.get(f"/runs/{flaky_run.run_id}").get_data(as_text=True)
    rows = re.findall(r'<g class="gantt-row gantt-(\w+)" data-task-id="([^"]+)"', page)
    group = rows.index(("group", "report"))
    assert ("task", "report.summary") in rows[group:] and ("mapped", "report.square") in rows
    instances = [r for k, r in rows if k == "instance"]
    assert instances == ["report.square[0]", "report.square[1]", "report.square[2]"]
    assert re.search(
        r'class="gantt-row gantt-instance" data-task-id="report.square\[0\]" data-state="success"',
        page,
    )
    assert re.search(
        r'data-task-id="report.square\[1\]"[^>]* data-in="report.square" display="none"', page
    )
    assert 'data-instances="3"' in page
    assert bars(page, "report.square[2]")[-1][0] == "running"
    assert f'href="/runs/{flaky_run.run_id}/tasks/report.square/map/2"' in page
    group_bar = bars(page, "report")
    assert [b[0] for b in group_bar] == ["group"]


SHELL_SOURCE = """
from datetime import timedelta

from orchestrator import DAG

with DAG("shell_retry_ui", schedule=None) as dag:
    dag.shell(
        "check",
        "echo try {{ try_number }} && test {{ try_number }} -gt 1",
        env={"TRY": "n{{ try_number }}"},
        retries=1,
        retry_delay=timedelta(seconds=1),
    )
"""


def test_each_try_shows_the_command_and_env_it_was_rendered_with(
    client, store, settings, clock, write_dag
):
    write_dag("shell_retry_ui.py", SHELL_SOURCE)
    harness = Harness(store, settings, clock)
    try:
        harness.parse()
        run = store.trigger_run("shell_retry_ui", clock.now())
        harness.run_until_finished(run.run_id)
    finally:
        harness.close()
    assert [t.state for t in store.tries(run.run_id, "check")] == ["failed", "success"]
    page = client.get(f"/runs/{run.run_id}/tasks/check").get_data(as_text=True)
    one = page.split('id="try-facts-1"', 1)[1].split('id="try-facts-2"', 1)[0]
    two = page.split('id="try-facts-2"', 1)[1].split('<h2 class="log-title">', 1)[0]
    assert (
        '<pre class="code rendered">echo try 1 &amp;&amp; test 1 -gt 1\n\n# env\nTRY=n1</pre>'
        in one
    )
    assert "echo try 2" not in one and "echo try 1" not in two
    # the current try's command is the page's own, above the tabs
    top = page.split("<h2>Rendered command", 1)[1].split("</pre>", 1)[0]
    assert "of try 2; each earlier try's tab shows its own" in top
    assert top.endswith('<pre class="code">echo try 2 &amp;&amp; test 2 -gt 1\n\n# env\nTRY=n2')
    assert '<dd class="exit-reason">failed, retried (exit status 1)</dd>' in one


def test_a_wide_mapped_task_unfolds_into_its_first_instances_and_says_so(
    client,
    mapped_run,  # noqa: F811
):
    page = client.get(f"/runs/{mapped_run.run_id}").get_data(as_text=True)
    assert 'load <tspan class="muted-text">[150 instances, the first 50 here]</tspan>' in page
    rows = re.findall(r'<g class="gantt-row gantt-instance" data-task-id="load\[(\d+)\]"', page)
    assert rows == [str(i) for i in range(50)]  # read by key, not all 150
    failed = re.search(r'data-task-id="load\[7\]" data-state="([a-z_]+)"', page)
    assert failed and failed.group(1) == "failed"
    assert bars(page, "load[7]")[-1][3].endswith("(failed)")
