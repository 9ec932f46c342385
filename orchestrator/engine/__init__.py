"""The long-running processes and their wiring.

The scheduler loop (:mod:`.scheduler`), the worker and its task processes
(:mod:`.worker`, :mod:`.runner`), the DAG processor and its parse pool
(:mod:`.processor`, :mod:`.parse_pool`), wake-ups (:mod:`.wakeup`), the process
services that ``standalone`` combines (:mod:`.services`) and ``tasks test``
(:mod:`.tasktest`). Each changes state only through the store.
"""
