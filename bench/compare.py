#!/usr/bin/env python
"""An old commit beside the working tree, alternately, in one sitting (issue 28).

The machines are shared and noisy (the same commit moves 2x between machines), so a
figure means something only beside another taken in the same sitting. This checks
REV out in a temporary git worktree and runs ``bench/run.py`` there and here in turn,
``--rounds`` times, then prints each figure's median on both sides and their ratio::

    python bench/compare.py 917ebca                          # sqlite wide and chain
    python bench/compare.py HEAD~5 --backend postgres --scenario wide --rounds 3

Each side runs its own code (its own ``bench/run.py``, with itself first on
``PYTHONPATH``), so a scenario REV does not have is reported as missing there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOWER_IS_BETTER = ("_ms", "wall_s", "_s_per_")


def run_side(tree: str, backend: str, scenario: str, repeat: int) -> dict[str, float]:
    """``bench/run.py`` of the checkout ``tree``: figure name -> value."""
    env = dict(os.environ, PYTHONPATH=tree)
    done = subprocess.run(
        [sys.executable, os.path.join(tree, "bench", "run.py"), "--backend", backend,
         "--scenario", scenario, "--repeat", str(repeat), "--json"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    try:
        results = json.loads(done.stdout)["results"]
    except (json.JSONDecodeError, KeyError):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        print(f"  {tree}: {backend}/{scenario} gave no figures: {tail[0][:200]}", file=sys.stderr)
        return {}
    return {
        f"{r['scenario']}.{r['figure']}": r["value"]
        for r in results
        if r.get("value") is not None and r["figure"] != "-"
    }


def compare(rev: str, backends: list[str], scenarios: list[str], rounds: int, repeat: int) -> int:
    old = tempfile.mkdtemp(prefix="orch-compare-")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", old, rev],
                   check=True, capture_output=True)  # fmt: skip
    try:
        values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        for n in range(rounds):
            for side, tree in (("rev", old), ("work", ROOT)):  # alternately, every round
                for backend in backends:
                    for scenario in scenarios:
                        print(f"round {n + 1}/{rounds}: {side} {backend}/{scenario}",
                              file=sys.stderr, flush=True)  # fmt: skip
                        for name, value in run_side(tree, backend, scenario, repeat).items():
                            values[(backend, name, side)].append(value)
        print(f"{'backend':8} {'figure':34} {rev[:12]:>12} {'working':>12} {'ratio':>7}")
        names = sorted({(b, f) for b, f, _ in values})
        for backend, name in names:
            a, b = values.get((backend, name, "rev")), values.get((backend, name, "work"))
            left = f"{statistics.median(a):12.3f}" if a else f"{'missing':>12}"
            right = f"{statistics.median(b):12.3f}" if b else f"{'missing':>12}"
            ratio = ""
            if a and b and statistics.median(a):
                r = statistics.median(b) / statistics.median(a)
                better = r < 1 if any(k in name for k in LOWER_IS_BETTER) else r > 1
                ratio = f"{r:6.2f}x" + (" better" if better and abs(r - 1) > 0.05 else "")
            print(f"{backend:8} {name:34} {left} {right} {ratio:>7}")
        return 0
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", old],
                       check=False, capture_output=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", help="the commit to compare the working tree with")
    ap.add_argument("--backend", choices=("sqlite", "postgres", "all"), default="sqlite")
    ap.add_argument("--scenario", action="append", help="a scenario (again for more; "
                    "default: wide and chain)")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=2, help="alternations (default 2)")
    ap.add_argument("--repeat", type=int, default=1, help="repeats per run (default 1)")
    args: Any = ap.parse_args(argv)
    if args.rounds < 1 or args.repeat < 1:
        ap.error("--rounds and --repeat must be at least 1")
    check = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", f"{args.rev}^{{commit}}"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if check.returncode != 0:
        ap.error(f"{args.rev!r} is not a commit of this repository")
    backends = ["sqlite", "postgres"] if args.backend == "all" else [args.backend]
    return compare(args.rev, backends, args.scenario or ["wide", "chain"], args.rounds,
                   args.repeat)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
