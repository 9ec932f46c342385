"""``orchestrator variables ...``: named values tasks and templates read.

``get`` reads through the same chain as tasks (``ORCHESTRATOR_VAR_<NAME>``, the
database, the secrets backend); ``list`` shows the database's variables. A secret
value is printed as ``***`` unless ``get --reveal`` asks for it; ``export`` writes the
values themselves to a 0600 file (a backup: keep it as safe as the database).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from orchestrator.cli.common import Parents, emit, open_store
from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.settings import Settings

RICH_KEYS = {"value", "description", "is_json", "is_secret"}


def register(sub: Any, parents: Parents) -> None:
    group = sub.add_parser("variables", help="variables: values tasks read").add_subparsers(
        dest="action", required=True
    )
    p = parents.add(group, "set", "create or replace a variable")
    p.add_argument("name", metavar="NAME")
    p.add_argument("value", metavar="VALUE")
    p.add_argument("--json", dest="is_json", action="store_true", help="VALUE is JSON")
    p.add_argument("--description", default=None)
    p.add_argument(
        "--secret",
        action="store_true",
        help="encrypt and mask it (automatic for names like *password*, *token*, *key*)",
    )
    p = parents.add(group, "get", "print a variable's value", json_output=True)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--default", default=None, help="printed when the variable exists nowhere")
    p.add_argument("--reveal", action="store_true", help="print a secret value, not ***")
    parents.add(group, "list", "list the database's variables (secrets as ***)", json_output=True)
    p = parents.add(group, "delete", "delete a variable")
    p.add_argument("name", metavar="NAME")
    p = parents.add(group, "import", "import variables from a JSON file, all or none")
    p.add_argument("file", metavar="FILE", help="the JSON file to read; - for standard input")
    p.add_argument(
        "--action-on-existing-key",
        choices=("overwrite", "fail", "skip"),
        default="overwrite",
        help="what to do with a variable that exists already (default: overwrite)",
    )
    p = parents.add(group, "export", "write every variable to a JSON file (mode 600)")
    p.add_argument(
        "file", metavar="FILE", help="the file to write (mode 600); - for standard output"
    )
    for choice in group.choices.values():
        choice.set_defaults(handler=cmd_variables)


def cmd_variables(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.store.credentials.secret_box import box_of

    store = open_store(settings)
    now = SystemClock().now()
    if args.action == "set":
        record = store.set_variable(
            args.name,
            args.value,
            now,
            box_of(settings),
            is_json=args.is_json,
            description=args.description,
            secret=args.secret,
        )
        kind = "secret " if record.is_secret else ""
        print(f"{kind}variable {args.name} set")
        return 0
    if args.action == "get":
        from orchestrator.engine.secrets_chain import SecretsChain

        found = SecretsChain(store, settings).variable(args.name)
        if found is None:
            if args.default is not None:
                print(args.default)
                return 0
            raise NotFoundError(f"no variable {args.name!r}")
        value = "***" if found.secret and not args.reveal else found.value
        if args.json:
            emit(args, {"key": args.name, "value": value, "is_secret": found.secret})
        else:
            print(value)
        return 0
    if args.action == "list":
        rows = [v.to_dict() for v in store.list_variables()]
        emit(args, rows, rows, ("key", "value", "is_json", "is_secret", "description"))
        return 0
    if args.action == "delete":
        store.delete_variable(args.name, now)
        print(f"variable {args.name} deleted")
        return 0
    if args.action == "import":
        items = _read_items(args.file)
        if args.action_on_existing_key == "skip":
            existing = {v.key for v in store.list_variables()}
            items = [i for i in items if i["key"] not in existing]
        count = store.import_variables(
            items, now, box_of(settings), overwrite=args.action_on_existing_key == "overwrite"
        )
        print(f"imported {count} variable(s) from {where(args.file, 'in')}")
        return 0
    records = store.export_variables(box_of(settings))
    data = {
        r.key: {
            "value": r.value,
            "is_json": r.is_json,
            "is_secret": r.is_secret,
            "description": r.description,
        }
        for r in records
    }
    write_private(args.file, data)
    print(f"exported {len(data)} variable(s) to {where(args.file)}", file=report_to(args.file))
    return 0


def _read_items(path: str) -> list[dict[str, Any]]:
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object of name -> value")
    items = []
    for key, value in data.items():
        if isinstance(value, dict) and "value" in value and set(value) <= RICH_KEYS:
            is_json = bool(value.get("is_json", False))
            raw = value["value"]
            if not isinstance(raw, str):  # a JSON value written as JSON
                raw, is_json = json.dumps(raw), True
            items.append(
                {
                    "key": key,
                    "value": raw,
                    "is_json": is_json,
                    "description": value.get("description"),
                    "is_secret": bool(value.get("is_secret", False)),
                }
            )
        elif isinstance(value, str):
            items.append({"key": key, "value": value})
        else:  # Airflow's export: JSON values as JSON
            items.append({"key": key, "value": json.dumps(value), "is_json": True})
    return items


def read_json_file(path: str) -> Any:
    """The JSON in ``path``; ``-`` is standard input."""
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON file ({exc})") from None


def write_private(path: str, data: Any) -> None:
    """Write JSON to ``path``, readable by its owner only (it holds secrets); ``-`` is
    standard output (the caller then reports on standard error, see :func:`report_to`)."""
    if path == "-":
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")


def where(path: str, direction: str = "out") -> str:
    """How a message names ``path``: ``-`` is standard output (or input)."""
    return path if path != "-" else f"standard {'output' if direction == 'out' else 'input'}"


def report_to(path: str) -> Any:
    """Where an export's summary goes: standard error when the data goes to stdout."""
    return sys.stderr if path == "-" else sys.stdout
