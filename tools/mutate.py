"""Mutation testing of one module, on demand (not part of CI): ``python -m tools.mutate``.

    pip install -e '.[test,mutation]'
    python -m tools.mutate orchestrator/store/tasks/claims.py
    python -m tools.mutate --list              # the modules and the tests each runs

It runs cosmic-ray (see docs/mutation.md for why cosmic-ray) on a scratch copy of this
checkout under ``.mutation/`` (cosmic-ray writes each mutant into the file on disk; the
checkout itself is never touched), with the operators of
:mod:`tools.mutation_operators` and, for each mutant, only the tests that
:mod:`tools.mutation_targets` maps to the module, stopping at the first failure. The
unmutated tests must pass first (the baseline). It prints the kill ratio and every
surviving mutant as a diff; a survivor listed in ``tools/mutation_equivalents.toml``
(with why it is equivalent) is counted apart. An interrupted run resumes where it
stopped while the module's source is unchanged; ``--fresh`` starts over.

PostgreSQL tests run for real (``ORCHESTRATOR_REQUIRE_POSTGRES=1``), as in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tools.mutation_report import ROOT, STATE, Outcome, report, summary


def main(argv: list[str] | None = None) -> int:
    from tools.mutation_targets import SQLITE_ONLY, TARGETS

    parser = argparse.ArgumentParser(
        prog="python -m tools.mutate", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "module", nargs="?", help="a module path, e.g. orchestrator/store/tasks/claims.py"
    )
    parser.add_argument("--list", action="store_true", help="the modules and their tests")
    parser.add_argument("--fresh", action="store_true", help="forget an earlier run of the module")
    parser.add_argument("--report", action="store_true", help="only report the last run")
    parser.add_argument("--json", action="store_true", help="the outcome as JSON")
    parser.add_argument(
        "--summary", action="store_true", help="a table of every module run so far (markdown)"
    )
    parser.add_argument(
        "--tests", help="run these tests instead of the mapped ones (space-separated)"
    )
    parser.add_argument(
        "--tests-from",
        metavar="REV",
        help="run the tests as they were at git revision REV (the kill ratio before a change)",
    )
    parser.add_argument(
        "--rerun-survivors",
        action="store_true",
        help="run the surviving mutants again (after adding tests); the rest keep their result",
    )
    args = parser.parse_args(argv)
    if args.summary:
        print(summary(TARGETS))
        return 0
    if args.list or not args.module:
        for module, tests in TARGETS.items():
            only = " (SQLite only)" if module in SQLITE_ONLY else ""
            print(f"{module}{only}\n    {' '.join(tests)}")
        return 0 if args.list else 2
    module = args.module.removeprefix("./")
    if module not in TARGETS and not args.tests:
        parser.error(f"module {module!r} has no tests mapped in tools/mutation_targets.py")
    if not (ROOT / module).is_file():
        parser.error(f"module {module!r}: no such file in {ROOT}")
    tests = args.tests.split() if args.tests else TARGETS[module]
    outcome = run(
        module,
        tests,
        fresh=args.fresh,
        report_only=args.report,
        tests_from=args.tests_from,
        rerun_survivors=args.rerun_survivors,
        postgres=module not in SQLITE_ONLY,
    )
    if args.json:
        print(json.dumps({"module": module, "killed": outcome.killed, "total": outcome.total,
                          "incompetent": outcome.incompetent, "survived": outcome.survived}, indent=1))  # fmt: skip
    return 1 if outcome.live else 0


def run(
    module: str,
    tests: list[str],
    *,
    fresh: bool = False,
    report_only: bool = False,
    tests_from: str | None = None,
    rerun_survivors: bool = False,
    postgres: bool = True,
) -> Outcome:
    """Mutate ``module`` and run ``tests`` against each mutant; the outcome.

    With ``tests_from``, each mutant meets the tests as they were at that revision
    first (its outcome there is the "before" of the report), and one that survives
    them meets the test functions added since. ``postgres`` False: the tests run on
    SQLite alone (a module that writes no SQL of its own).
    """
    from cosmic_ray.commands.init import init
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    from tools import mutation_operators, mutation_runner

    mutation_operators.install()
    mutation_runner.install()
    home = STATE / module.replace("/", "_").removesuffix(".py")
    tree, session, stamp = home / "tree", home / "session.sqlite", home / "stamp.json"
    source_hash = hashlib.sha256((ROOT / module).read_bytes()).hexdigest()
    want = {"source": source_hash, "tests": tests}
    if report_only:
        return report(session, module)
    home.mkdir(parents=True, exist_ok=True)
    _copy_checkout(tree)
    if rerun_survivors and session.exists():
        _forget_survivors(session, home / "report-before-rerun.txt", module)
    os.chdir(tree)
    os.environ.update(ORCHESTRATOR_REQUIRE_POSTGRES="1", PYTHONDONTWRITEBYTECODE="1")
    now = _Tests(tree, tests, postgres)
    then = None
    if tests_from:
        then = _Tests(_tests_at(tree, home / "before", tests_from), tests, postgres)
    took = (then or now).baseline()
    added = now.added_since(then) if then else []
    if added:
        print(f"added since {tests_from}: {' '.join(added)}", flush=True)
        _Tests(tree, added, postgres).baseline()
    resume = (
        session.exists() and not fresh and stamp.exists() and json.loads(stamp.read_text()) == want
    )
    timeout = max(60.0, took * 4)  # a mutant that hangs (a loop that never ends) is killed
    before_file = home / "before.json"
    before = json.loads(before_file.read_text()) if resume and before_file.exists() else {}
    with use_db(str(session), WorkDB.Mode.create) as db:
        if not resume:
            init([Path(module)], db, {})
            stamp.write_text(json.dumps(want))
        known = set(mutation_operators.names())
        pending = []
        for item in sorted(db.pending_work_items, key=_position):
            if item.mutations[0].operator_name in known:
                pending.append(item)
            else:  # an operator dropped since the run began
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
        print(f"{db.num_work_items} mutants, {len(pending)} to run", flush=True)
        for n, item in enumerate(pending, 1):
            result = (then or now).against(item, timeout)
            if then is not None:
                before[item.job_id] = _verdict(result)
                before_file.write_text(json.dumps(before))
                if _verdict(result) == "survived" and added:
                    result = _Tests(tree, added, postgres).against(item, timeout, split=False)
            db.set_result(item.job_id, result)
            spec = item.mutations[0]
            print(
                f"[{n}/{len(pending)}] {module}:{spec.start_pos[0]} {spec.operator_name}: "
                f"{_verdict(result)}" + (f" (before: {before[item.job_id]})" if then else ""),
                flush=True,
            )
    os.chdir(ROOT)
    return report(session, module)


def _verdict(result) -> str:
    from cosmic_ray.work_item import WorkerOutcome

    if result.worker_outcome != WorkerOutcome.NORMAL:
        return "not testable"
    return str(result.test_outcome.value)


class _Tests:
    """Test selections run from one tree (``root``): the checkout's copy, or a tree
    whose tests/ are another revision's."""

    def __init__(self, root: Path, tests: list[str], postgres: bool = True) -> None:
        assert tests, "no tests: pytest would run the whole suite"
        self.root = root
        self.tests = tests
        self.postgres = postgres

    def command(self, *extra: str) -> str:
        runner = [sys.executable, "-m", "tools.mutation_pytest", "--root", str(self.root)]
        if not self.postgres and not extra:
            extra = ("-m", "not postgres")
        return shlex.join([*runner, "-x", "-q", "-p", "no:cacheprovider", *self.tests, *extra])

    def baseline(self) -> float:
        """Run once without a mutant: they must pass. Seconds taken."""
        command = self.command()
        print(f"baseline: {command}", flush=True)
        began = time.monotonic()
        done = subprocess.run(shlex.split(command), capture_output=True, text=True)
        took = time.monotonic() - began
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-2000:], sep="\n")
            raise SystemExit(f"the tests fail without any mutant ({took:.0f}s): fix them first")
        print(f"baseline passed in {took:.0f}s", flush=True)
        return took

    def against(self, item, timeout: float, *, split: bool = True):
        """Apply ``item``'s mutant and run the tests. SQLite (and the tests on no
        database) first; a mutant that survives them meets PostgreSQL: half the time
        for the mutants SQLite kills."""
        from cosmic_ray.mutating import mutate_and_test

        if not split or not self.postgres:
            return mutate_and_test(item.mutations, self.command(), timeout)
        result = mutate_and_test(item.mutations, self.command("-m", "not postgres"), timeout)
        if _verdict(result) == "survived":
            result = mutate_and_test(item.mutations, self.command("-m", "postgres"), timeout)
        return result

    def added_since(self, then: _Tests) -> list[str]:
        """The test functions (node ids without parameters) here and not in ``then``."""
        return sorted(set(self._functions()) - set(then._functions()))

    def _functions(self) -> list[str]:
        done = subprocess.run(
            shlex.split(self.command("--collect-only").replace(" -x ", " ")),
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return sorted({line.split("[")[0] for line in done.stdout.splitlines() if "::" in line})


def _tests_at(tree: Path, before: Path, rev: str) -> Path:
    """A tree beside ``tree`` whose tests/ are ``rev``'s and whose every other entry is
    a symlink into ``tree`` (so it sees the mutant)."""
    if before.exists():
        shutil.rmtree(before)
    before.mkdir()
    for entry in tree.iterdir():
        if entry.name != "tests":
            (before / entry.name).symlink_to(entry)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "tests"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    return before


def _position(item) -> tuple:
    spec = item.mutations[0]
    return (spec.start_pos, spec.operator_name, spec.occurrence)


def _forget_survivors(session: Path, keep: Path, module: str) -> None:
    """Drop the results of the surviving mutants, so they run again; the report as it
    stood is kept in ``keep``."""
    import io
    import sqlite3

    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        report(session, module)
    keep.write_text(text.getvalue())
    with contextlib.closing(sqlite3.connect(session)) as db, db:
        gone = db.execute(
            "DELETE FROM work_results WHERE worker_outcome = 'NORMAL' AND test_outcome = 'SURVIVED'"
        ).rowcount
    print(f"{gone} surviving mutant(s) to run again (the report before: {keep})", flush=True)


def _copy_checkout(tree: Path) -> None:
    """The checkout's files as they are now (tracked and untracked, not ignored)."""
    if tree.exists():
        shutil.rmtree(tree)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            dst = tree / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


if __name__ == "__main__":
    sys.exit(main())
