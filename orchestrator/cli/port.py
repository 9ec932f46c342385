"""``orchestrator dags port PATH... [--write | --diff]`` (issue 26 item 2): rewrite the
Airflow imports of DAG files to ``orchestrator.airflow`` and report, per file, ported /
ported with warnings (each named) / not portable (each unsupported name at its line).
It changes no file without ``--write`` (and never a file that is not portable);
``--diff`` prints the unified diff. Exit status 0 when every file ports, 1 when one
does not, 2 on a bad argument (a path that does not exist)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from orchestrator.settings import Settings


def register(dags: Any, parents: Any) -> None:
    """Add ``port`` to the ``dags`` sub-commands."""
    p = parents.add(
        dags,
        "port",
        "rewrite Airflow DAG files' imports to orchestrator.airflow and report what ports",
        json_output=True,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="DAG files or folders of them")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--write", action="store_true", help="write the ported files in place")
    how.add_argument("--diff", action="store_true", help="print a unified diff of each file")
    p.set_defaults(handler=cmd_port)


def _files(paths: list[str]) -> list[str]:
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
                out.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(".py"))
        elif os.path.isfile(path):
            out.append(path)
        else:
            raise FileNotFoundError(path)
    return out


def cmd_port(args: argparse.Namespace, settings: Settings) -> int:
    """The command: never opens the store."""
    import json

    from orchestrator.airflow.porting import NOT_PORTABLE, port_source

    try:
        files = _files(args.paths)
    except FileNotFoundError as exc:
        print(f"orchestrator: error: no such file or folder: {exc.args[0]}", file=sys.stderr)
        return 2
    reports = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            report = port_source(f.read(), path)
        written = False
        if args.write and report.changed and report.verdict != NOT_PORTABLE:
            tmp = f"{path}.orchestrator-port"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(report.text)
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
            os.replace(tmp, path)  # whole or not at all
            written = True
        reports.append((report, written))
    if args.json:
        out = [
            {"path": r.path, "verdict": r.verdict, "rewritten": r.rewritten,
             "warnings": r.warnings, "problems": r.problems, "written": w}
            for r, w in reports
        ]  # fmt: skip
        print(json.dumps(out, indent=2))
    else:
        for report, written in reports:
            if args.diff and report.changed:
                sys.stdout.write(report.diff())
            note = f"{report.rewritten} import(s) rewritten"
            if args.write:
                note += ", written" if written else ", not written"
            print(f"{report.path}: {report.verdict} ({note})")
            for line in report.problems + report.warnings:
                print(f"  {line}")
    ported = sum(r.verdict != NOT_PORTABLE for r, _ in reports)
    if not args.json:
        print(f"{len(reports)} file(s): {ported} ported, {len(reports) - ported} not portable")
    return 0 if ported == len(reports) else 1
