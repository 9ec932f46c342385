"""Imported by the worker's forkserver at its start (a preload module, ``task_processes.mp_context``):
the forkserver's starting environment, which every task process it forks would
inherit and could read in ``/proc/self/environ``, is wiped (``start_environ``)."""

from orchestrator.engine.start_environ import hide_start_environment

hide_start_environment()
