"""Which of the worker's environment variables a task inherits.

The orchestrator's own settings live in ``ORCHESTRATOR_*`` variables, among them the
database URL (with its password) and the metrics token: a task must not receive them.
A variable is inherited unless its name matches a ``task_env_deny`` pattern (default
``ORCHESTRATOR_*``) and no ``task_env_allow`` pattern (default none). Patterns are
shell-style globs (``fnmatch``, case-sensitive), comma-separated in the settings. The
variables a try gets from the orchestrator itself (``ORCHESTRATOR_DAG_ID``, ...,
``dag.shell(env=...)``) are added after the filter, so they always reach the task.

>>> policy = EnvPolicy.from_settings("ORCHESTRATOR_*,*_SECRET", "ORCHESTRATOR_REGION")
>>> sorted(policy.filter({"PATH": "/bin", "ORCHESTRATOR_DATABASE_URL": "postgresql://u:pw@db",
...                       "AWS_SECRET": "x", "ORCHESTRATOR_REGION": "eu"}))
['ORCHESTRATOR_REGION', 'PATH']
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase


def _patterns(text: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


@dataclass(frozen=True)
class EnvPolicy:
    deny: tuple[str, ...] = ("ORCHESTRATOR_*",)
    allow: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, deny: str | None, allow: str | None) -> EnvPolicy:
        return cls(_patterns(deny), _patterns(allow))

    def inherits(self, name: str) -> bool:
        if not any(fnmatchcase(name, p) for p in self.deny):
            return True
        return any(fnmatchcase(name, p) for p in self.allow)

    def filter(self, environ: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in environ.items() if self.inherits(k)}

    def apply_to_this_process(self) -> None:
        """Drop the denied variables from ``os.environ`` (a task child, at start), so a
        Python task does not see them and a shell command does not inherit them."""
        for name in [k for k in os.environ if not self.inherits(k)]:
            del os.environ[name]
