"""What every command shares: settings, the store, output and argument checks."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from orchestrator.errors import ConfigError
from orchestrator.settings import FIELDS, Settings

_opened: list[Any] = []  # stores opened by this command, disposed when it ends


@dataclass(frozen=True)
class Parents:
    """Parent parsers: the global flags, and --json for list/show commands."""

    common: argparse.ArgumentParser
    as_json: argparse.ArgumentParser

    def add(
        self, parent: Any, name: str, help_: str, *, json_output: bool = False
    ) -> argparse.ArgumentParser:
        parents = [self.common, self.as_json] if json_output else [self.common]
        return parent.add_parser(name, help=help_, description=help_, parents=parents)


def make_parents() -> Parents:
    common = argparse.ArgumentParser(add_help=False)
    for name in ("database_url", "dags_folder", "state_dir", "lease_seconds", "heartbeat_seconds"):
        common.add_argument(
            f"--{name.replace('_', '-')}", dest=name, default=None, help=FIELDS[name][2]
        )
    common.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING, ERROR")
    common.add_argument(
        "--log-format", choices=("text", "json"), default=None, help="json: one object a line"
    )
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON")
    return Parents(common, as_json)


def dispose_opened() -> None:
    while _opened:
        _opened.pop().dispose()


def load_settings(args: argparse.Namespace) -> Settings:
    overrides = {
        name: getattr(args, name, None)
        for name in (
            "database_url",
            "dags_folder",
            "state_dir",
            "lease_seconds",
            "heartbeat_seconds",
        )
    }
    if getattr(args, "host", None):
        overrides["web_host"] = args.host
    if getattr(args, "port", None):
        overrides["web_port"] = args.port
    if getattr(args, "concurrency", None):
        overrides["worker_concurrency"] = args.concurrency
    return Settings.load(**overrides)


def open_store(settings: Settings) -> Any:
    from sqlalchemy import inspect

    from orchestrator.store import Store
    from orchestrator.store.identity import record_database, refuse_lost_database, sqlite_path

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
        present = inspect(store.engine).has_table("dag_runs")
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
