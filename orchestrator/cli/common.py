"""What every command shares: settings, the store, output and argument checks."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn

from orchestrator.errors import ConfigError
from orchestrator.settings import FIELDS, Settings

_opened: list[Any] = []  # stores opened by this command, disposed when it ends

MAX_INT = 2**31 - 1  # the largest count, limit or size a command takes (an SQL INTEGER)
# as store.tasks.claims.POOL_NAME (not imported: the store pulls in Alembic, whose import
# logs before the command has configured logging)
POOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,250}")


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error on one line: ``orchestrator runs list: error: ...``
    and a pointer to ``--help`` (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        """argparse's, with an unknown flag named by the sub-command that was given it
        and the closest flag suggested (issue 26)."""
        from orchestrator.cli.did_you_mean import chosen_parser, unrecognized

        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            leaf = chosen_parser(self, ns)
            leaf.error(unrecognized(leaf, extras))
        return ns

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """An unknown command or choice, with the closest one suggested (issue 26)."""
        from orchestrator.cli.did_you_mean import invalid_choice

        if action.choices is not None and value not in action.choices:
            raise invalid_choice(action, value, self.prog)


def whole(low: int = 1, high: int = MAX_INT) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high], else a usage error naming both."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {text}")
        return value

    return parse


def pool_name(text: str) -> str:
    """An argparse type: letters, digits, ``_``, ``-`` and ``.``, up to 250 of them."""
    if not POOL_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"pool names are 1-250 letters, digits, '_', '-' or '.', got {text!r}"
        )
    return text


GLOBAL_SETTINGS = ("database_url", "dags_folder", "state_dir", "lease_seconds", "heartbeat_seconds")


@dataclass(frozen=True)
class Parents:
    """Parent parsers: the global flags, and --json for list/show commands.

    The global flags go before the command or after it (``orchestrator --database-url
    B runs list`` and ``orchestrator runs list --database-url B``): ``top`` gives the
    main parser the flags with their defaults; ``common`` gives every command the same
    flags without defaults (``SUPPRESS``), so a command that was not given one keeps
    the value read before the command instead of resetting it.
    """

    common: argparse.ArgumentParser
    as_json: argparse.ArgumentParser
    top: argparse.ArgumentParser

    def add(
        self, parent: Any, name: str, help_: str, *, json_output: bool = False
    ) -> argparse.ArgumentParser:
        parents = [self.common, self.as_json] if json_output else [self.common]
        return parent.add_parser(name, help=help_, description=help_, parents=parents)


def _global_flags(default: Any) -> argparse.ArgumentParser:
    parser = Parser(add_help=False)
    for name in GLOBAL_SETTINGS:
        parser.add_argument(
            f"--{name.replace('_', '-')}", dest=name, default=default, help=FIELDS[name][2]
        )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        default=default,
        help="DEBUG, INFO (default), WARNING, ERROR",
    )
    parser.add_argument(
        "--log-format", choices=("text", "json"), default=default, help="json: one object a line"
    )
    return parser


class _Output(argparse.Action):
    """Airflow's ``-o/--output json|table|plain`` (issue 26): ``json`` is ``--json``."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        namespace.json = values == "json"


def make_parents() -> Parents:
    as_json = Parser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON")
    as_json.add_argument(
        "-o",
        "--output",
        action=_Output,
        choices=("json", "table", "plain"),
        default=argparse.SUPPRESS,
        help="Airflow's flag: json is --json, table and plain the default table",
    )
    return Parents(_global_flags(argparse.SUPPRESS), as_json, _global_flags(None))


def cli_actor() -> str:
    """Who is running this command, for the runs it creates: ``cli:USER@HOST``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        user = f"uid{os.getuid()}" if hasattr(os, "getuid") else "unknown"
    return f"cli:{user}@{socket.gethostname()}"


def dispose_opened() -> None:
    while _opened:
        _opened.pop().dispose()


def load_settings(args: argparse.Namespace) -> Settings:
    overrides = {name: getattr(args, name, None) for name in GLOBAL_SETTINGS}
    if getattr(args, "host", None):
        overrides["web_host"] = args.host
    if getattr(args, "port", None):
        overrides["web_port"] = args.port
    if getattr(args, "concurrency", None):
        overrides["worker_concurrency"] = args.concurrency
    if getattr(args, "allow_root_tasks", None):  # issue 24
        overrides["allow_root_tasks"] = True
    if getattr(args, "task_user", None):
        overrides["task_user"] = args.task_user
    return Settings.load(**overrides)


def open_store(settings: Settings) -> Any:
    from orchestrator.store import Store
    from orchestrator.store.core.db import has_schema
    from orchestrator.store.core.identity import record_database, refuse_lost_database, sqlite_path

    path = sqlite_path(settings.database_url)
    if path is not None and not os.path.exists(path):  # do not create an empty file
        refuse_lost_database(settings.state_dir, settings.database_url)
        raise ConfigError(
            f"no database at {path} yet: run 'orchestrator db upgrade' first "
            "(or start 'orchestrator standalone')"
        )
    store = Store(settings.database_url, settings=settings)
    _opened.append(store)
    try:
        present = has_schema(store.engine)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"cannot reach the database: {str(exc).splitlines()[0]}") from None
    if not present:
        raise ConfigError("the database has no schema yet: run 'orchestrator db upgrade' first")
    record_database(settings.state_dir, settings.database_url)
    return store


def emit(
    args: argparse.Namespace,
    data: Any,
    table: list[dict[str, Any]] | None = None,
    columns: Sequence[str] = (),
) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, default=str))
        return
    if table is None:
        print(data if isinstance(data, str) else json.dumps(data, indent=2, default=str))
        return
    print(format_table(table, columns))


def format_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, datetime):
            return v.isoformat(timespec="seconds")
        if isinstance(v, bool):
            return "yes" if v else "no"
        return str(v)

    body = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(b, widths, strict=True)).rstrip() for b in body]
    if not rows:
        lines.append("(none)")
    return "\n".join(lines)


def bad_arguments_exit_2(handler: Callable[..., int], *args: Any) -> int:
    """Run a command whose own statuses are 0 (it worked) and 1 (what it ran failed),
    so a bad argument (a ConfigError or NotFoundError) is one line and status 2, as a
    usage error is: ``tasks test`` and ``dags test`` (issue 25)."""
    from orchestrator.errors import NotFoundError

    try:
        return handler(*args)
    except (ConfigError, NotFoundError) as exc:
        print(f"orchestrator: error: {exc}", file=sys.stderr)
        return 2


def parse_json_object(text: str | None, flag: str) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{flag}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ConfigError(
            f"{flag}: expected a JSON object like '{{\"key\": 1}}', got {type(value).__name__}"
        )
    return value
