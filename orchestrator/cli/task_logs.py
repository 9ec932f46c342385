"""``orchestrator tasks logs RUN TASK``: a try's log from this machine or from the store.

A try that ran on this machine has its log file in the log folder; a try that ran on
another one is read from the pieces its worker shipped to the store (issue 17), so the
command works from any machine that reaches the database. ``--follow`` keeps printing
what a running try writes until the try ends.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, BinaryIO

from orchestrator.cli.common import emit
from orchestrator.cli.logview import read_log_text, stream_log
from orchestrator.engine.settings_secrets import MaskedBytes, settings_masker
from orchestrator.errors import NotFoundError
from orchestrator.settings import Settings
from orchestrator.store.observe.log_store import StoredLogFile

FOLLOW_SECONDS = 1.0


def _choose(args: argparse.Namespace, store: Any) -> Any:
    inst = store.task_instance(args.run_id, args.task_id, getattr(args, "map_index", None))
    tries = store.tries(args.run_id, args.task_id, inst.map_index)
    if not tries:
        raise NotFoundError(f"task {args.task_id!r} of run {args.run_id!r} has not started yet")
    if args.try_number is None:
        return tries[-1]
    chosen = next((t for t in tries if t.try_number == args.try_number), None)
    if chosen is None:
        raise NotFoundError(
            f"task {args.task_id!r} has no try {args.try_number} (tries: 1..{tries[-1].try_number})"
        )
    return chosen


def _source(settings: Settings, store: Any, t: Any) -> tuple[str | BinaryIO | None, str]:
    """(the local file's path, or the shipped log as a file, or None; where it is)."""
    path = os.path.join(settings.log_dir, t.log_path or "")
    if t.log_path and os.path.isfile(path):
        return path, "file"
    stored = StoredLogFile(store, t.ti_id, t.try_number)
    if stored.pieces:
        return stored, "store"
    return None, path


def show_try_log(args: argparse.Namespace, settings: Settings, store: Any) -> int:
    chosen = _choose(args, store)
    source, where = _source(settings, store, chosen)
    masker = settings_masker(settings)  # issue 24: the settings' secrets, like variables
    if args.json:
        text = read_log_text(source, tail=args.tail) if source is not None else ""
        text = masker.mask(text) if masker else text
        where = where if source is not None else None
        emit(args, chosen.to_dict() | {"log": text, "log_source": where})
        return 0
    sys.stdout.flush()
    out: Any = MaskedBytes(sys.stdout.buffer, masker) if masker else sys.stdout.buffer
    escape = not args.raw and sys.stdout.isatty()
    if source is None and not args.follow:
        print(f"(no log: none at {where} and none shipped to the store by worker {chosen.worker})")
        return 0
    at = 0
    if source is not None:  # streamed: a log of any size is printed in constant memory
        at = _end_after(source, out, args.tail, escape)
    while args.follow:
        t = next(x for x in store.tries(args.run_id, args.task_id, chosen.map_index)
                 if x.try_number == chosen.try_number)  # fmt: skip
        source, _ = _source(settings, store, t)
        printed = 0
        if source is not None:
            printed = stream_log(source, out, start=at, escape=escape)
            at += printed
        if t.end_date is not None and not printed:
            break
        time.sleep(FOLLOW_SECONDS)
    return 0


def _end_after(source: str | BinaryIO, out: BinaryIO, tail: int | None, escape: bool) -> int:
    """Print the log (its last ``tail`` lines); returns the byte offset printed up to."""
    if isinstance(source, str):
        with open(source, "rb") as f:
            stream_log(f, out, tail=tail, escape=escape)
            return f.tell()
    stream_log(source, out, tail=tail, escape=escape)
    return source.tell()
