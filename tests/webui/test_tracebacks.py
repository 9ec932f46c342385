"""The stored error trimmed to the user's frames (webui/tracebacks.py), from real
tracebacks formatted by the ``traceback`` module, as the runner stores them."""

from __future__ import annotations

from pathlib import Path

from webui.tracebacks import is_own_path, parse_frames, trim

USER_FILE = "/srv/dags/etl.py"
OWN_FILE = "/opt/venv/lib/python3.12/site-packages/orchestrator/engine/runner.py"


def stored_error(code: str) -> str:
    """Run ``code``'s ``task`` (its frames in USER_FILE) from a runner in OWN_FILE that
    stores the error as engine/runner.py does: ``"Type: message"`` and the traceback
    ``traceback.format_exception`` wrote."""
    runner = (
        "import traceback\n"
        "def run_try(fn):\n"
        "    try:\n"
        "        return fn()\n"
        "    except Exception as exc:\n"
        "        text = ''.join(traceback.format_exception(exc))\n"
        "        return f'{type(exc).__name__}: {exc}\\n{text}'\n"
    )
    scope: dict = {}
    exec(compile(code, USER_FILE, "exec"), scope)
    exec(compile(runner, OWN_FILE, "exec"), scope)
    return scope["run_try"](scope["task"])


def test_the_users_innermost_frame_comes_first_and_the_runner_is_hidden():
    error = stored_error(
        "def parse(text):\n"
        "    return int(text)\n"
        "def task():\n"
        "    rows = parse('x')\n"
        "    return rows\n"
    )
    shown = trim(error)
    assert shown.exception == "ValueError: invalid literal for int() with base 10: 'x'"
    assert [(f.path, f.line, f.function) for f in shown.frames] == [
        (USER_FILE, 2, "parse"),
        (USER_FILE, 4, "task"),
    ]
    assert shown.hidden == 1  # run_try, in the orchestrator's package
    assert shown.full == error  # the whole text, for the toggle
    assert all(not f.own for f in shown.frames)


def test_a_chained_error_shows_the_last_exception_and_its_frames():
    error = stored_error(
        "def task():\n"
        "    try:\n"
        "        {}['key']\n"
        "    except KeyError as exc:\n"
        "        raise RuntimeError('no key') from exc\n"
    )
    shown = trim(error)
    assert shown.exception == "RuntimeError: no key"
    assert [(f.line, f.function) for f in shown.frames] == [(5, "task")]


def test_an_error_without_traceback_is_shown_as_it_is():
    for text in ("timed out after 0:00:05 and was killed", "", None):
        shown = trim(text)
        assert shown.exception == (text or "")
        assert shown.frames == () and shown.hidden == 0 and not shown.has_traceback


def test_an_error_of_the_orchestrators_own_keeps_its_frames():
    """A traceback with no user frame at all (a bad DAG file import, say) is not emptied."""
    text = (
        "ImportError: no\nTraceback (most recent call last):\n"
        f'  File "{OWN_FILE}", line 3, in run_try\n    load()\nImportError: no\n'
    )
    shown = trim(text)
    assert [f.path for f in shown.frames] == [OWN_FILE] and shown.hidden == 0


def test_hostile_text_is_kept_as_text_and_odd_lines_are_skipped():
    text = (
        "Boom: <script>x</script>\nTraceback (most recent call last):\n"
        '  File "/srv/dags/<b>.py", line 9, in <module>\n'
        "    x()\n"
        "  [Previous line repeated 996 more times]\n"
        "Boom: <script>x</script>\n"
    )
    shown = trim(text)
    assert shown.exception == "Boom: <script>x</script>"  # escaped by the template
    assert [(f.path, f.line, f.function, f.code) for f in shown.frames] == [
        ("/srv/dags/<b>.py", 9, "<module>", ("x()",))
    ]


def test_what_counts_as_the_orchestrators_own_code():
    package = Path(__file__).resolve().parents[2] / "orchestrator"
    assert is_own_path(str(package / "engine" / "runner.py"))
    assert is_own_path(str(package / "sensors.py"))
    assert is_own_path("C:\\venv\\Lib\\site-packages\\orchestrator\\authoring\\taskflow.py")
    assert is_own_path("/venv/site-packages/orchestrator/webui/app.py")
    assert not is_own_path("/srv/orchestrator/dags/etl.py")  # a DAG folder of that name
    assert not is_own_path("/srv/dags/orchestrator_helpers.py")
    assert not is_own_path("/usr/lib/python3.12/subprocess.py")
    frames, exception = parse_frames("no traceback here")
    assert frames == [] and exception == ""
