"""pytest for one mutant: ``python -m tools.mutation_pytest --root TREE ARGS...``.

As ``python -m pytest ARGS`` run in ``TREE`` with ``TREE`` first on the path (its own
tests/ package, and PYTHONPATH for the processes the tests start), except that
selecting no test (exit 5: ``-m postgres`` over unit tests) passes, so cosmic-ray does
not count it as a kill. :func:`run_in` is the same in a process forked from
``tools.mutate``, which has imported the third-party libraries once already.
"""

from __future__ import annotations

import os
import sys


def run_in(root: str, args: list[str]) -> int:
    """Run pytest on ``args`` in the tree ``root``; its exit code (0 for no test)."""
    root = os.path.abspath(root)
    away = {
        os.path.abspath(os.getcwd()),
        os.path.abspath(os.path.dirname(os.path.dirname(__file__))),
    }
    os.chdir(root)
    sys.path[:] = [root] + [p for p in sys.path if p and os.path.abspath(p) not in away]
    os.environ["PYTHONPATH"] = root
    sys.dont_write_bytecode = True  # a mutant one byte apart must never meet a stale .pyc
    import pytest

    code = pytest.main(args)
    return 0 if code == pytest.ExitCode.NO_TESTS_COLLECTED else int(code)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["--root"]:
        sys.exit(run_in(argv[1], argv[2:]))
    sys.exit(run_in(os.getcwd(), argv))
