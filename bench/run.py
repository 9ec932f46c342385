#!/usr/bin/env python
"""Baseline benchmarks for the orchestrator engine: ``python bench/run.py --help``.

The code lives in ``bench/benchlib.py``. This entry point stays import-free on
purpose: the worker's task processes come from a multiprocessing forkserver, which
re-imports the parent's ``__main__`` module in every new child; a heavy ``__main__``
would add its own import time to each child's start-up and skew the figures.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from benchlib import main

    sys.exit(main())
