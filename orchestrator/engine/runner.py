"""Code that runs inside child processes: parsing DAG files and running task tries.

Children are started from a forkserver, so they never inherit the parent's threads
or database connections. Each sets itself to die with its parent (Linux
``PR_SET_PDEATHSIG``) and leads its own process group, so the parent can kill it and
any shell commands it started in one call.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import io
import json
import logging
import os
import select
import signal
import subprocess
import sys
import traceback
from datetime import datetime
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle
from typing import Any

from orchestrator.authoring.loader import DagImportError, display_path, load_file, read_source
from orchestrator.authoring.taskflow import invoke, output_error
from orchestrator.authoring.triggers import TaskDeferred
from orchestrator.authoring.xcom_arg import resolve
from orchestrator.engine.deferral_try import deferral_outcome, resume
from orchestrator.engine.fd_capture import FdCapture
from orchestrator.engine.masking import Masker, mask_outcome
from orchestrator.engine.proctree import become_subreaper, end_descendants
from orchestrator.engine.sensor_try import SensorWait, run_sensor
from orchestrator.engine.task_hooks import controlled, run_hook, skipped
from orchestrator.engine.task_user import TaskUser, become
from orchestrator.engine.taskenv import EnvPolicy
from orchestrator.engine.tasklog import CappedLog
from orchestrator.engine.virtualenv_task import run_in_python_env
from orchestrator.errors import Fail, Skip

_PR_SET_PDEATHSIG = 1
_LOG_FORMAT = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
_NO_CAP = 1 << 62


def die_with_parent() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _release_forkserver() -> None:
    """Let the forkserver exit when the worker dies, so this child dies with it.

    A forkserver child inherits the forkserver's "alive" pipe write end, and the
    forkserver only exits once every holder of that pipe is gone. Kept open here,
    a SIGKILLed worker would leave the forkserver (our parent) running, so
    PR_SET_PDEATHSIG would never fire and the task would run on, orphaned. With it
    closed, only the worker holds the pipe: worker dies -> forkserver sees EOF and
    exits -> the kernel SIGKILLs this child.
    """
    with contextlib.suppress(Exception):
        from multiprocessing import forkserver

        server = forkserver._forkserver  # type: ignore[attr-defined]
        fd = server._forkserver_alive_fd
        if fd is not None:
            server._forkserver_alive_fd = None
            os.close(fd)


def _become(user: TaskUser | None) -> str | None:
    """Become ``user`` (a task or parse child, first thing); why not, or None."""
    if user is None:
        return None
    try:
        become(user)
    except OSError as exc:
        return f"cannot become task user {user.name!r}: {exc}"
    return None


def _child_setup() -> None:
    die_with_parent()
    _release_forkserver()
    with contextlib.suppress(OSError):
        os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# -- DAG parsing --------------------------------------------------------------------------
def parse_server(
    conn: Connection,
    root: str,
    env_policy: EnvPolicy | None = None,
    user: TaskUser | None = None,
) -> None:
    """Parse DAG files, one at a time, until the parent hangs up (a parse pool child).

    Between files it forgets what the last one imported from ``root`` (the DAG module
    and helper modules next to it) and restores ``sys.path``, so every file sees its
    helpers as they are now. A file that hangs or kills the interpreter takes only this
    child with it: the parent reports that file and starts a new child for the rest.
    A copy of this process forked by a DAG file gets the channel closed and exits when
    the import returns: it can never answer for a file. DAG files see the environment
    tasks see (``task_env_deny`` / ``task_env_allow``), as the user tasks run as
    (``task_user``).
    """
    refused = _become(user)
    if refused:
        raise SystemExit(refused)  # the pool reports the file as its child died
    _child_setup()
    (env_policy or EnvPolicy()).apply_to_this_process()
    os.register_at_fork(after_in_child=conn.close)
    me = os.getpid()
    while True:
        try:
            path = conn.recv()
        except (EOFError, OSError):
            return
        if path is None:
            return
        payload = parse_one(path, root)
        if os.getpid() != me:
            os._exit(0)
        try:
            conn.send(payload)
        except (BrokenPipeError, OSError):
            return
        except Exception as exc:  # noqa: BLE001 - pickling failed before anything was sent
            conn.send({"error": f"{display_path(path)}: cannot send the parsed DAGs: {exc}"})


def parse_one(path: str, root: str) -> dict[str, Any]:
    """``{"dags": [...]}`` or ``{"error": ..., "traceback": ...}``; never raises.

    Each DAG's dict names ``path`` as its ``fileloc`` and carries the file's text as
    ``source`` (read before importing it: see :func:`read_source`), whatever file the
    DAG object claims to come from: user code can forge that (``exec(compile(src,
    "/etc/passwd", "exec"))``), and the store keeps the source with the version.
    """
    from orchestrator.authoring import template_files
    from orchestrator.authoring.spec import serialize_dag

    path = os.path.abspath(path)
    if not inside_folder(path, root):  # issue 24: never read (nor quote) what it points at
        return {
            "error": f"{display_path(path)}: a symlink that leads out of the dags folder "
            "is not followed (its target is neither read nor imported)",
            "traceback": None,
            "template_files": [],
        }
    source = read_source(path)  # one object for all of the file's DAGs: pickled once
    modules, search_path = set(sys.modules), list(sys.path)
    importlib.invalidate_caches()  # see helper files created since the last file
    sink = io.StringIO()
    template_files.start_recording()  # issue 25: the processor watches them too
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            dags = load_file(path)
            payload: dict[str, Any] = {
                "dags": [serialize_dag(d) | {"fileloc": path, "source": source} for d in dags]
            }
    except DagImportError as exc:
        payload = {"error": exc.message, "traceback": exc.tb}
    except BaseException as exc:  # noqa: BLE001
        payload = {
            "error": f"{display_path(path)}: {type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    finally:
        _forget_imports(modules, root)
        sys.path[:] = search_path
        payload["template_files"] = template_files.recorded()
    return payload


def inside_folder(path: str, root: str) -> bool:
    """Whether ``path``, symlinks resolved, is inside the folder ``root``."""
    real_root = os.path.join(os.path.realpath(root), "")
    return os.path.realpath(path).startswith(real_root)


def _forget_imports(before: set[str], root: str) -> None:
    """Drop the modules imported since ``before`` that live under ``root`` (or nowhere)."""
    prefix = os.path.join(os.path.abspath(root), "")
    for name in set(sys.modules) - before:
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if name.startswith("orchestrator_dag_") or (
            where and os.path.abspath(where).startswith(prefix)
        ):
            sys.modules.pop(name, None)


# -- running tries ------------------------------------------------------------------------
def task_child(
    conn: Connection, env_policy: EnvPolicy | None = None, user: TaskUser | None = None
) -> None:
    """Serve task tries, one at a time, until the parent hangs up.

    Every reply is ``(tag, pid, outcome)``: the tag of the job it answers (its try) and
    this process's pid, so the worker can tell a reply of this process for this try
    from anything else on the channel. A process the task forks gets the channel
    closed (``os.register_at_fork``) and, if it returns from the task function, exits
    there; whatever a try left running is ended before its outcome is sent
    (:mod:`orchestrator.engine.proctree`).

    With a ``user`` (``task_user``), this process becomes that OS user first, before
    any user code (:mod:`orchestrator.engine.task_user`); each try's log file arrives
    open from the worker, after the job, so nothing here opens the state folder.
    """
    refused = _become(user)
    _child_setup()
    become_subreaper()
    (env_policy or EnvPolicy()).apply_to_this_process()
    os.register_at_fork(after_in_child=conn.close)
    me = os.getpid()
    cache: dict[str, tuple[int, dict[str, Any]]] = {}
    capture = FdCapture()  # what the tries' processes write to fds 1 and 2: their logs
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        masker = Masker()  # this try's secrets, masked in its log, error and result
        try:
            if type(job) is dict and job.get("log_fd"):
                job["log_fd"] = recv_handle(conn)  # the worker opened the log file
            if refused:
                if type(job.get("log_fd")) is int:
                    os.close(job["log_fd"])
                raise OSError(refused)
            outcome = run_try(job, cache, masker, _asker(conn, job.get("tag"), me), capture)
        except Exception as exc:  # noqa: BLE001 - e.g. the log file cannot be opened
            outcome = {
                "ok": False,
                "error": f"cannot run the try: {type(exc).__name__}: {exc}",
                "exit_status": None,
            }
        if os.getpid() != me:  # a forked copy got here: it must not answer
            os._exit(0)
        outcome = mask_outcome(masker, outcome)
        try:
            conn.send((job.get("tag"), me, outcome))
        except (BrokenPipeError, OSError):
            return


def _dags_of(path: str, cache: dict[str, tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    mtime = os.stat(path).st_mtime_ns
    hit = cache.get(path)
    if hit is None or hit[0] != mtime:
        hit = cache[path] = (mtime, {d.dag_id: d for d in load_file(path)})
    return hit[1]


def _asker(conn: Connection, tag: Any, pid: int) -> Any:
    from orchestrator.engine.task_secrets import channel_asker

    return channel_asker(conn, tag, pid)


def run_try(
    job: dict[str, Any],
    cache: dict[str, tuple[int, dict[str, Any]]],
    masker: Masker | None = None,
    ask: Any = None,
    capture: FdCapture | None = None,
) -> dict[str, Any]:
    """Run one try described by ``job``; never raises. ``ask`` looks variables and
    connections up (the worker, over the channel); ``masker`` learns their secrets."""
    from orchestrator.authoring.context import TaskContext, asset_events_of
    from orchestrator.authoring.templating import render_env, render_shell
    from orchestrator.engine.task_secrets import masked_source

    me = os.getpid()
    masker = masker if masker is not None else Masker()
    fd = job.get("log_fd")
    limit = job.get("max_log_bytes") or _NO_CAP
    logfile = CappedLog(job["log_file"], limit, masker, fd=fd if type(fd) is int else None)
    if capture is not None:
        capture.attach(logfile)
    # one logger for every try this child runs (a logger per task would make each
    # setLevel walk all of them), writing to this try's log file only
    logger = logging.getLogger("orchestrator.task")
    logger.handlers.clear()
    logger.propagate = False
    if logger.level != logging.INFO:
        logger.setLevel(logging.INFO)
    handler = logging.StreamHandler(logfile)
    handler.setFormatter(_LOG_FORMAT)
    logger.addHandler(handler)
    ctx = TaskContext(
        dag_id=job["dag_id"],
        run_id=job["run_id"],
        task_id=job["task_id"],
        logical_date=datetime.fromisoformat(job["logical_date"]),
        data_interval_start=datetime.fromisoformat(job["data_interval_start"]),
        data_interval_end=datetime.fromisoformat(job["data_interval_end"]),
        try_number=job["try_number"],
        params=job["params"],
        idempotency_key=job["idempotency_key"],
        log=logger,
        upstream_ids=tuple(job["upstream"]),
        _results=job["results"],
        credentials=masked_source(ask, masker) if ask is not None else None,
        outlets=tuple(job.get("outlets") or ()),
        triggering_asset_events=asset_events_of(job.get("triggering_asset_events")),
        map_index=job.get("map_index", -1),
        mapped_over=tuple(job.get("mapped_over") or ()),
        same_instance=tuple(job.get("same_instance") or ()),
        timezone=job.get("timezone") or "UTC",
        conf=job.get("conf") or {},
        run_type=job.get("run_type") or "manual",
        ask=ask,
        max_result_bytes=job["max_result_bytes"],
        mask_value=masker.mask_value,
    )
    # issue 14: the task's on_execute / on_success hooks (engine/task_hooks.py)
    hook = functools.partial(run_hook, job, ctx, lambda: _dags_of(job["fileloc"], cache), logger)
    kwargs = job.get("map_kwargs")  # a mapped instance's arguments (None: not mapped)
    item = job.get("group_item")  # a mapped task group instance's item (issue 25 item 7)
    if not (job.get("sensor") and job.get("poke_count", 0)):
        # a rescheduled sensor's later pokes continue its try's log with one "poke N"
        # line each (engine/sensor_try.py), not a "starting" line before every poke
        logger.info(
            "starting dag_id=%s run_id=%s task_id=%s try=%s%s",
            ctx.dag_id,
            ctx.run_id,
            ctx.task_id,
            ctx.try_number,
            f" map_index={ctx.map_index}" if ctx.map_index >= 0 else "",
        )
    try:
        if job["kind"] == "shell":
            # the values travel in the environment, never in the text the shell parses
            # a mapped instance's arguments are template variables too, values like any other
            macros, filters = _user_templates(job, cache)
            mapped = resolve(kwargs or {}, ctx.upstream, ctx.task_id, ctx.params)  # partial(x=ref)
            variables = ctx.template_vars(job["timezone"]) | macros | mapped
            shell = render_shell(job["command"], variables, filters)
            task_env = render_env(job.get("env") or {}, variables, filters)  # issue 25
            command = shell.script
            logger.info("command: %s", shell.display)
            handler.flush()
            env = dict(os.environ)
            env.update(task_env)
            env.update(shell.env)
            env.update(
                ORCHESTRATOR_DAG_ID=ctx.dag_id,
                ORCHESTRATOR_RUN_ID=ctx.run_id,
                ORCHESTRATOR_TASK_ID=ctx.task_id,
                ORCHESTRATOR_TRY_NUMBER=str(ctx.try_number),
                ORCHESTRATOR_IDEMPOTENCY_KEY=ctx.idempotency_key,
                ORCHESTRATOR_MAP_INDEX=str(ctx.map_index),
            )
            hook("on_execute")
            tail = _LastLine(logfile) if job.get("output_last_line") else None
            argv = [job.get("shell") or "/bin/sh", "-c", command]  # bash for BashOperator
            returncode = _run_command(argv, tail or logfile, env=env, cwd=job.get("cwd") or None)
            logfile.end_of_output()
            if returncode != 0 and returncode == job.get("skip_on_exit_code"):
                return skipped(logger, f"command exited with status {returncode}", returncode)
            if returncode != 0:
                return _failure(logger, f"command exited with status {returncode}", returncode)
            logger.info("command succeeded")
            hook("on_success")
            if tail is not None and tail.line is not None:  # issue 26: as a JSON string
                result = json.dumps(masker.mask_value(tail.line))
                if len(result.encode()) > job["max_result_bytes"]:
                    return _failure(
                        logger,
                        f"task {ctx.task_id!r}: its last line of output is "
                        f"{len(result.encode())} bytes of JSON, over the "
                        f"{job['max_result_bytes']}-byte limit (max_result_bytes)",
                        None,
                    )
                return {"ok": True, "result": result}
            return {"ok": True, "result": None}
        if job["kind"] == "http":
            hook("on_execute")
            outcome = _http_try(job, ctx, cache, logger)
            if outcome.get("ok"):
                hook("on_success")
            return outcome
        dags = _dags_of(job["fileloc"], cache)
        dag = dags.get(job["dag_id"])
        if dag is None or job["task_id"] not in dag.tasks:
            return _failure(
                logger,
                f"{job['fileloc']} no longer defines task {job['dag_id']}.{job['task_id']}",
                None,
            )
        if dag.tasks[job["task_id"]].python_env:  # @task.virtualenv / external_python
            variables = ctx.template_vars(job["timezone"]) | dag.user_defined_macros
            rendered = render_env(job.get("env") or {}, variables, dag.user_defined_filters)
            return run_in_python_env(
                dag.tasks[job["task_id"]], job | {"env": rendered}, ctx, logfile, logger,
                _run_command,
            )  # fmt: skip
        task = dag.tasks[job["task_id"]]
        fn = task.fn
        hook("on_execute")
        with contextlib.redirect_stdout(logfile), contextlib.redirect_stderr(logfile):
            try:
                if job.get("next_method"):  # issue 30: its trigger fired (deferral_try.py)
                    value = resume(fn, job, ctx, logger)
                elif job.get("sensor"):  # issue 15: poke (engine/sensor_try.py)
                    value = run_sensor(
                        lambda: invoke(task, ctx, kwargs, _takes_argument, item),
                        job["sensor"],
                        job.get("poke_count", 0),
                        logger,
                    )
                else:  # issue 25: a TaskFlow call's arguments resolved (taskflow.py)
                    value = invoke(task, ctx, kwargs, _takes_argument, item)
            except BaseException as exc:
                if os.getpid() != me:  # the task forked and this copy is done with it
                    _exit_forked_copy(exc)
                raise
            if os.getpid() != me:
                _exit_forked_copy(None)
        logfile.end_of_output()
        if isinstance(value, SensorWait):
            return value.outcome
        result = None
        wrong = output_error(task, value)  # issue 25: multiple_outputs needs a dict
        if wrong is not None:
            return _failure(logger, wrong, None)
        if value is not None:
            # issue 25: the errors name the task and the key (its result's: return_value)
            where = f"task {ctx.task_id!r} key 'return_value'"
            try:
                result = json.dumps(masker.mask_value(value))
            except (TypeError, ValueError) as exc:
                return _failure(
                    logger,
                    f"{where}: return value is not JSON-serialisable "
                    f"({type(value).__name__}): {exc}",
                    None,
                )
            if len(result.encode()) > job["max_result_bytes"]:
                return _failure(
                    logger,
                    f"{where}: return value is {len(result.encode())} bytes of JSON, over the "
                    f"{job['max_result_bytes']}-byte limit (max_result_bytes)",
                    None,
                )
        logger.info("succeeded")
        hook("on_success")
        return {"ok": True, "result": result, **ctx.outlet_outcome()}
    except DagImportError as exc:
        return _failure(logger, f"cannot import the DAG file: {exc.message}", None)
    except TaskDeferred as exc:  # issue 30: ctx.defer(...) (engine/deferral_try.py)
        logfile.end_of_output()
        return deferral_outcome(exc, dag.tasks[job["task_id"]].fn, job, logger)
    except (Skip, Fail) as exc:  # issue 14: the task says how it ends
        logfile.end_of_output()
        return controlled(logger, exc)
    except BaseException as exc:  # noqa: BLE001 - the task's error, whatever it is
        logfile.end_of_output()
        text = "".join(traceback.format_exception(exc))
        logger.error("failed:\n%s", text.rstrip())
        exit_status = (
            exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else None
        )
        return {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}\n{text}",
            "exit_status": exit_status,
        }
    finally:
        logfile.end_of_output()
        left = end_descendants(me)
        if left:
            logger.warning(
                "ended %d process(es) the try left running (a try's processes end with it)",
                left,
            )
        handler.flush()
        logger.removeHandler(handler)
        if capture is not None:
            capture.detach()
        logfile.close()
        sys.stdout.flush()


def _http_try(job: dict[str, Any], ctx: Any, cache: dict, logger: logging.Logger) -> dict[str, Any]:
    """An HTTP task's try; its DAG file is imported only for a ``response_check``."""
    from orchestrator.engine.http_task import run_http

    check = None
    if job["http"]["response_check"]:
        dag = _dags_of(job["fileloc"], cache).get(job["dag_id"])
        task = dag.tasks.get(job["task_id"]) if dag is not None else None
        if task is None or task.response_check is None:
            return _failure(
                logger,
                f"{job['fileloc']} no longer defines the response_check of "
                f"{job['dag_id']}.{job['task_id']}",
                None,
            )
        check = task.response_check
    macros, filters = _user_templates(job, cache)
    out = run_http(
        job["http"],
        ctx.template_vars(job["timezone"]) | macros,
        logger,
        max_result_bytes=job["max_result_bytes"],
        response_check=check,
        ctx=ctx,
        filters=filters,
    )
    return {**out, **ctx.outlet_outcome()} if out.get("ok") else out


def _user_templates(job: dict[str, Any], cache: dict) -> tuple[dict[str, Any], dict[str, Any]]:
    """The DAG's ``user_defined_macros`` and ``user_defined_filters`` when the task's
    templates use them (issue 25): only then is the DAG file imported to render them."""
    if not job.get("user_templates"):
        return {}, {}
    dag = _dags_of(job["fileloc"], cache).get(job["dag_id"])
    if dag is None:
        raise DagImportError(f"{job['fileloc']} no longer defines DAG {job['dag_id']}")
    return dag.user_defined_macros, dag.user_defined_filters


def _run_command(argv: list[str], log: CappedLog, *, env: dict[str, str], cwd: str | None) -> int:
    """Run ``argv`` with its output (stdout and stderr) copied into ``log``; its status.

    Output is read through a pipe so the log's cap applies to it. Reading stops when the
    command exits: a background process it left holding the pipe does not keep the try
    open (it is ended with the try).
    """
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        preexec_fn=die_with_parent,
    )
    assert proc.stdout is not None
    out = proc.stdout.fileno()
    os.set_blocking(out, False)
    try:
        exited = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        exited = None
    watch, wait_at_most = ([out], 0.2) if exited is None else ([out, exited], None)
    try:
        while True:
            ready = select.select(watch, [], [], wait_at_most)[0]
            if out in ready and not _drain(out, log):
                break  # end of output: every writer is gone
            if (exited in ready) if exited is not None else (proc.poll() is not None):
                _drain(out, log, budget=1 << 20)  # what it wrote before exiting
                break
        return proc.wait()
    finally:
        proc.stdout.close()
        if exited is not None:
            os.close(exited)


class _LastLine:
    """A command's output on its way to the log, its last non-empty line kept (a shell
    task's result with ``output_last_line``, BashOperator's XCom: issue 26)."""

    def __init__(self, log: CappedLog) -> None:
        self.log = log
        self.line: str | None = None
        self._partial = b""

    def write_bytes(self, data: bytes) -> None:
        self.log.write_bytes(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()[-65536:]
        done = [x for x in lines if x.strip()]
        if done:
            self.line = done[-1][-65536:].decode("utf-8", "backslashreplace")
        if self._partial.strip():
            self.line = self._partial.decode("utf-8", "backslashreplace")


def _drain(fd: int, log: CappedLog, budget: int = 1 << 22) -> bool:
    """Copy what ``fd`` holds now (at most about ``budget`` bytes) into ``log``; False at
    end of file."""
    while budget > 0:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return True
        if not data:
            return False
        log.write_bytes(data)
        budget -= len(data)
    return True


def _exit_forked_copy(exc: BaseException | None) -> None:
    """End a process the task forked when it leaves the task function, as Python would
    end it (exit status from ``SystemExit``, a traceback for an error) but without
    running the rest of the task runner: it must never answer for the try."""
    code = 0
    if isinstance(exc, SystemExit):
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:
            print(exc.code, file=sys.stderr)
            code = 1
    elif exc is not None:
        traceback.print_exception(exc)
        code = 1
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code & 0xFF)


def _failure(logger: logging.Logger, message: str, exit_status: int | None) -> dict[str, Any]:
    logger.error("failed: %s", message)
    return {"ok": False, "error": message, "exit_status": exit_status}


@functools.lru_cache(maxsize=1024)
def _takes_argument(fn: Any) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )
