"""The ``orchestrator`` command line.

Exit status 0 on success; 1 with a one-line ``orchestrator: error: ...`` on a failed
operation (or input the store refuses); 2 with a one-line reason on a bad argument;
141 (quietly) when the reader of stdout has gone, as in ``orchestrator runs list | head``.
The global flags (``--database-url`` and the others of ``common.make_parents``) go
before the command or after it. Every list/show command takes ``--json``,
whose fields use the store's names (dag_id, run_id, logical_date, state, ...).

Each command group lives in its own module with a ``register(subparsers, parents)``
that adds its parsers and sets ``handler``; add a module to ``GROUPS`` to add a group.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import logging
import os
import sys
from collections.abc import Sequence

from sqlalchemy.exc import DBAPIError

from orchestrator.cli import (
    alerts,
    assets,
    backfill,
    connections,
    dags,
    pools,
    processes,
    runs,
    schedule,
    secrets,
    status,
    tasks,
    users,
    variables,
)
from orchestrator.cli.common import Parser, dispose_opened, load_settings, make_parents
from orchestrator.errors import OrchestratorError, ParamValidationError, UsageError
from orchestrator.observability.logging_setup import configure as configure_logging
from orchestrator.state_folder import restrict_umask

GROUPS = (processes, dags, runs, tasks, users, status, pools, backfill, schedule, alerts)
GROUPS += (variables, connections, secrets)  # issue 16
GROUPS += (assets,)  # issue 15


def build_parser() -> argparse.ArgumentParser:
    parents = make_parents()
    parser = Parser(
        prog="orchestrator",
        description="A DAG workflow orchestrator and job scheduler.",
        parents=[parents.top],
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.register(sub, parents)
    return parser


def _keep_children_light() -> None:
    """Stop task and parse children from re-importing the console script.

    multiprocessing makes each child import the parent's ``__main__`` from its path
    when it has no module name, and the ``orchestrator`` console script imports the
    whole CLI (SQLAlchemy included): about 20 MB per child. Named like a package's
    ``__main__``, it is skipped, as with ``python -m orchestrator``.
    """
    main_module = sys.modules.get("__main__")
    if main_module is not None and getattr(main_module, "__spec__", None) is None:
        main_module.__spec__ = importlib.machinery.ModuleSpec("orchestrator.__main__", None)


def _mask_settings_secrets(settings: object) -> None:
    """issue 24: the settings' secrets never reach this command's log lines."""
    from orchestrator.engine.settings_secrets import settings_masker
    from orchestrator.observability.logging_setup import mask_with

    masker = settings_masker(settings)
    if masker:
        mask_with(masker.mask)


def main(argv: Sequence[str] | None = None) -> int:
    _keep_children_light()
    restrict_umask()  # issue 24: what any command creates is its user's alone
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2): a status, as below
        return exc.code if isinstance(exc.code, int) else 2
    level = (args.log_level or "INFO").upper()
    configure_logging(level, args.log_format or "text")
    if not getattr(args, "long_running", False):
        logging.getLogger().setLevel(logging.WARNING if not args.log_level else level)
    try:
        settings = load_settings(args)
        _mask_settings_secrets(settings)
        status = args.handler(args, settings)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:
        # `orchestrator runs list | head -1`: the reader has gone; stop quietly (and
        # point stdout at /dev/null so the interpreter's last flush can't complain)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what `yes | head -1` reports for yes
    except (ParamValidationError, UsageError) as exc:  # a wrong argument: --conf breaks a
        # param's rule, or two forms of a command are mixed (issue 26)
        print(f"orchestrator: error: {exc}", file=sys.stderr)
        return 2
    except OrchestratorError as exc:
        print(f"orchestrator: error: {exc}", file=sys.stderr)
        return 1
    except OverflowError as exc:  # a number no column holds, wherever it was checked last
        print(f"orchestrator: error: a number is too large: {exc}", file=sys.stderr)
        return 2
    except DBAPIError as exc:
        print(f"orchestrator: error: database: {str(exc.orig).splitlines()[0]}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        dispose_opened()
