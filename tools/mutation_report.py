"""What ``tools.mutate`` reports: a module's outcome from its cosmic-ray session, the
equivalent mutants of ``tools/mutation_equivalents.toml``, and the summary table."""

from __future__ import annotations

import contextlib
import io
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / ".mutation"
EQUIVALENTS = ROOT / "tools" / "mutation_equivalents.toml"


@dataclass(frozen=True)
class Outcome:
    killed: int
    survived: list[dict]  # {"job", "operator", "line", "diff", "why" (equivalent) or None}
    incompetent: int
    total: int
    pending: int = 0  # mutants not run yet

    @property
    def equivalent(self) -> list[dict]:
        return [s for s in self.survived if s["why"]]

    @property
    def live(self) -> list[dict]:
        return [s for s in self.survived if not s["why"]]

    def ratio(self) -> str:
        tested = self.killed + len(self.survived)
        if not tested:
            return "no mutant tested"
        raw = self.killed / tested
        real = tested - len(self.equivalent)
        adjusted = self.killed / real if real else 1.0
        return (
            f"{self.killed}/{tested} killed ({raw:.0%}); "
            f"{len(self.equivalent)} equivalent; "
            f"{self.killed}/{real} of the non-equivalent ({adjusted:.0%})"
        )


def summary(targets: dict[str, list[str]]) -> str:
    """One markdown row per module with a run: mutants, before, after, equivalent, left."""

    rows = [
        "| module | mutants | killed before | killed after | equivalent | after, of the non-equivalent | left |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for module in targets:
        home = STATE / module.replace("/", "_").removesuffix(".py")
        if not (home / "session.sqlite").exists():
            rows.append(f"| `{module}` | not run yet | | | | | |")
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            outcome = report(home / "session.sqlite", module)
        tested = outcome.killed + len(outcome.survived)
        before = "-"
        if (home / "before.json").exists():
            verdicts = json.loads((home / "before.json").read_text())
            killed = sum(v == "killed" for v in verdicts.values())
            counted = sum(v in ("killed", "survived") for v in verdicts.values())
            before = f"{killed}/{counted} ({killed / counted:.0%})" if counted else "-"
        real = tested - len(outcome.equivalent)
        adjusted = f"{outcome.killed}/{real} ({outcome.killed / real:.0%})" if real else "-"
        done = f" (partial: {outcome.pending} not run)" if outcome.pending else ""
        rows.append(
            f"| `{module}`{done} | {outcome.total} | {before} | "
            f"{outcome.killed}/{tested} ({outcome.killed / tested:.0%}) | "
            f"{len(outcome.equivalent)} | {adjusted} | {len(outcome.live)} |"
        )
    rows += ["", "Equivalent mutants (tools/mutation_equivalents.toml):", ""]
    for module in targets:
        for e in _equivalents(module):
            rows.append(
                f"- `{module}`, {e['operator']}: `{e['line']}` into `{e.get('becomes', '?')}`: {e['why']}"
            )
    return "\n".join(rows)


def _equivalents(module: str) -> list[dict]:
    if not EQUIVALENTS.exists():
        return []
    entries = tomllib.loads(EQUIVALENTS.read_text()).get("equivalent", [])
    return [e for e in entries if e["module"] == module]


def _mutated_line(diff: str) -> tuple[str, str]:
    """(the first removed line, the first added line) of a mutant's diff, stripped."""
    removed = [
        x[1:].strip() for x in diff.splitlines() if x.startswith("-") and not x.startswith("---")
    ]
    added = [
        x[1:].strip() for x in diff.splitlines() if x.startswith("+") and not x.startswith("+++")
    ]
    return (removed[0] if removed else "", added[0] if added else "")


def report(session: Path, module: str) -> Outcome:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    if not session.exists():
        raise SystemExit(f"no run of {module} yet")
    known = _equivalents(module)
    killed = incompetent = total = skipped = 0
    survived = []
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                skipped += 1
                continue  # an operator dropped since the run began
            total += 1
            if result.worker_outcome != WorkerOutcome.NORMAL:
                incompetent += 1
                continue
            if result.test_outcome == TestOutcome.KILLED:
                killed += 1
                continue
            if result.test_outcome == TestOutcome.INCOMPETENT:
                incompetent += 1
                continue
            mutation = item.mutations[0]
            before, after = _mutated_line(result.diff)
            why = next(
                (e["why"] for e in known
                 if e["operator"] == mutation.operator_name and e["line"] == before
                 and e.get("becomes", after) == after),
                None,
            )  # fmt: skip
            survived.append({
                "job": item.job_id, "operator": mutation.operator_name,
                "at": f"{module}:{mutation.start_pos[0]}", "line": before, "becomes": after,
                "diff": result.diff, "why": why,
            })  # fmt: skip
        pending = db.num_work_items - skipped - total
    survived.sort(key=lambda s: int(s["at"].rsplit(":", 1)[1]))
    outcome = Outcome(killed, survived, incompetent, total, pending)
    print(f"\n{module}: {outcome.ratio()}; {incompetent} not testable (the mutant would not run)")
    for s in outcome.live:
        print(f"\nSURVIVED {s['operator']} at {s['at']}")
        print(s["diff"].rstrip())
    for s in outcome.equivalent:
        print(f"equivalent: {s['operator']} at {s['at']}: {s['why']}")
    return outcome
