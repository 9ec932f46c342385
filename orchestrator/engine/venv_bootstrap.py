"""Runs one task function in another interpreter (a task's virtualenv or external python).

Started by :mod:`orchestrator.engine.virtualenv_task` as ``python -I -u THIS IN OUT``:
it imports nothing but the standard library (the orchestrator need not be installed
there, and ``-I`` keeps the worker's ``PYTHONPATH`` and user site out), reads the
function's source and the context from the JSON file ``IN``, defines and calls the
function, and writes ``{"ok": true, "result": <JSON text or null>}`` or ``{"ok": false,
"error": ..., "exit_status": ...}`` to ``OUT``. The function's output (prints,
``ctx.log``) goes to this process's stdout and stderr, which the runner copies into the
try's log. Keep it runnable by any Python 3.8 or later.
"""

import __future__

import json
import logging
import os
import sys
import traceback
from datetime import datetime


class TaskContext:
    """The context of a task in its own interpreter: the values of the usual ``ctx``
    built from JSON (ids, dates, params, try number, map index, upstream results)."""

    def __init__(self, data, log):
        self.dag_id = data["dag_id"]
        self.run_id = data["run_id"]
        self.task_id = data["task_id"]
        self.try_number = data["try_number"]
        self.params = data["params"]
        self.idempotency_key = data["idempotency_key"]
        self.map_index = data.get("map_index")
        self.logical_date = datetime.fromisoformat(data["logical_date"])
        self.data_interval_start = datetime.fromisoformat(data["data_interval_start"])
        self.data_interval_end = datetime.fromisoformat(data["data_interval_end"])
        self.ds = data.get("ds")
        self.ts = data.get("ts")
        self.upstream_ids = tuple(data["upstream"])
        self.log = log
        self._results = data["results"]

    def upstream(self, task_id):
        """The JSON return value of upstream task ``task_id`` (None if it returned None)."""
        if task_id not in self.upstream_ids:
            raise KeyError(
                f"task {self.task_id!r} has no upstream task {task_id!r} "
                f"(upstream: {', '.join(self.upstream_ids) or 'none'})"
            )
        raw = self._results.get(task_id)
        return None if raw is None else json.loads(raw)

    def __getattr__(self, name):
        raise AttributeError(
            f"ctx.{name} is not available to a task in its own interpreter: it has the "
            "ids, dates, params, try_number, map_index and upstream() of the context; "
            "pass anything else in params or upstream results"
        )

    def __repr__(self):
        return f"<TaskContext {self.dag_id}.{self.task_id} {self.run_id} try {self.try_number}>"


def _write(path, outcome):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(outcome, fh)
    os.replace(tmp, path)


def main(argv):
    with open(argv[1]) as fh:
        job = json.load(fh)
    out = argv[2]
    log = logging.getLogger("orchestrator.task")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    function = job["function"]
    namespace = {"__name__": "__orchestrator_task__", "__file__": function["filename"]}
    try:
        # annotations stay unevaluated: they may name what only the DAG file imports
        flags = __future__.annotations.compiler_flag
        code = compile(function["source"], function["filename"], "exec", flags, dont_inherit=True)
        exec(code, namespace)  # noqa: S102 - the task's own function, from its DAG file
        fn = namespace[function["name"]]
        ctx = TaskContext(job["context"], log)
        if "args" in job:  # a TaskFlow call (issue 25): its resolved arguments
            first = [ctx] if job.get("ctx_first") else []
            value = fn(*first, *job["args"], **job["kwargs"])
        else:
            value = fn(ctx) if function["takes_context"] else fn()
    except BaseException as exc:  # noqa: BLE001 - the task's error, whatever it is
        text = traceback.format_exc()  # logged once, by the runner
        status = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else None
        _write(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}\n{text}",
                     "exit_status": status})  # fmt: skip
        sys.stdout.flush()
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    if value is None:
        _write(out, {"ok": True, "result": None})
        return 0
    try:
        result = json.dumps(value)
    except (TypeError, ValueError) as exc:
        _write(out, {"ok": False, "error": f"return value is not JSON-serialisable: {exc}",
                     "exit_status": None})  # fmt: skip
        return 1
    _write(out, {"ok": True, "result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
