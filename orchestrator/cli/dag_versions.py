"""``orchestrator dags versions DAG``: a DAG's stored versions, one version's file, and
what changed between two (``--diff A B``). A version is named by its number, by
``current`` or by a prefix of its hash, as in the web UI.
"""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.cli.common import Parents, emit
from orchestrator.cli.logview import escape_controls


def register(dags: Any, parents: Parents) -> None:
    p = parents.add(dags, "versions", "list a DAG's stored versions; --diff A B", json_output=True)
    p.add_argument("dag_id")
    p.add_argument(
        "--diff", nargs=2, metavar=("A", "B"), default=None,
        help="what changed from version A to B (numbers, 'current' or hash prefixes)",
    )  # fmt: skip
    p.add_argument("--source", metavar="VERSION", default=None, help="print that version's file")


def cmd_versions(args: argparse.Namespace, store: Any) -> int:
    if args.diff:
        got = store.compare_versions(args.dag_id, *args.diff)
        if args.json:
            emit(args, got | {"from": got["from"].to_dict(), "to": got["to"].to_dict(),
                              "diff": "\n".join(got["diff"])})  # fmt: skip
            return 0
        old, new = got["from"], got["to"]
        print(f"{args.dag_id}: version {old.number} ({old.hash[:12]}) -> {new.number} "
              f"({new.hash[:12]})")  # fmt: skip
        print("definition:" if got["changes"] else "definition: unchanged")
        for line in got["changes"]:
            print(f"  {escape_controls(line)}")
        for n in got["source_missing"]:
            print(f"(no source stored with version {n}: compared as empty)")
        for line in got["diff"]:
            print(escape_controls(line))
        return 0
    if args.source is not None:
        version = store.dag_version(args.dag_id, args.source)
        src = store.version_source(args.dag_id, version.hash)
        if args.json:
            emit(args, version.to_dict() | {"source": None if src is None else src.text})
        elif src is None:
            print(f"(no source stored with version {version.number})")
        else:
            print(escape_controls(src.text), end="" if src.text.endswith("\n") else "\n")
        return 0
    rows = [x.to_dict() | {"hash": x.hash[:12] if not args.json else x.hash}
            for x in store.dag_versions(args.dag_id, count_runs=True)]  # fmt: skip
    for row in rows:
        row["current"] = row.pop("is_current")
    emit(args, rows, rows, ("number", "created_at", "hash", "runs", "current"))
    return 0
