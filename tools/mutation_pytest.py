"""pytest for one mutant: ``python -m tools.mutation_pytest --root TREE ARGS...``.

As ``python -m pytest ARGS`` run in ``TREE`` with ``TREE`` first on the path (its own
tests/ package, and PYTHONPATH for the processes the tests start), except that
selecting no test (exit 5: ``-m postgres`` over unit tests) passes, so cosmic-ray does
not count it as a kill.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    args = sys.argv[1:]
    root = ""
    if args[:1] == ["--root"]:
        root, args = os.path.abspath(args[1]), args[2:]
        here = os.path.abspath(os.getcwd())
        os.chdir(root)
        sys.path[:] = [root] + [p for p in sys.path if p and os.path.abspath(p) != here]
        os.environ["PYTHONPATH"] = root
    import pytest

    code = pytest.main(args)
    sys.exit(0 if code == pytest.ExitCode.NO_TESTS_COLLECTED else int(code))
