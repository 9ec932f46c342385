"""Which of the worker's environment variables a task inherits: an allow-list.

A task process (and a parse process: importing a DAG file runs user code too) keeps
only the variables that ``task_env_allow`` or ``task_env_extra`` names, less those
``task_env_deny`` names. Patterns are shell-style globs (``fnmatch``, case-sensitive),
comma-separated in the settings. When a name matches both an allow and a deny
pattern, the more specific pattern decides (the one with more characters that are not
``*``); a tie denies. So ``ORCHESTRATOR_REGION`` in ``task_env_extra`` beats the
default deny ``ORCHESTRATOR_*``, and ``APP_SECRET`` in ``task_env_extra`` beats a
``*_SECRET`` deny. The variable and connection overrides (``ORCHESTRATOR_VAR_*``,
``ORCHESTRATOR_CONN_*``) are not inherited: the worker reads them and answers a task's
``ctx.variable`` / ``ctx.connection`` (a connection URI in a task's environment would
be a secret no log masks).

The orchestrator's own settings secrets never reach a task, whatever the settings
say: the variables named in :data:`SETTINGS_SECRETS` (the database URL, the metrics
token, the web secret, the secrets key...), every ``ORCHESTRATOR_*`` setting whose name
says it is a secret, and any variable, under any name, whose value is one of those
settings' values (``DATABASE_URL=$ORCHESTRATOR_DATABASE_URL``). The policy keeps only
hashes of those values, so a task process does not receive them that way either.

The variables a try gets from the orchestrator itself (``ORCHESTRATOR_DAG_ID``, ...,
``dag.shell(env=...)``) are added after the filter, so they always reach the task.

>>> policy = EnvPolicy.from_settings("ORCHESTRATOR_*,*_SECRET", "PATH,ORCHESTRATOR_REGION")
>>> sorted(policy.filter({"PATH": "/bin", "ORCHESTRATOR_DATABASE_URL": "postgresql://u:pw@db",
...                       "AWS_SECRET": "x", "ORCHESTRATOR_REGION": "eu", "EDITOR": "vi"}))
['ORCHESTRATOR_REGION', 'PATH']
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from orchestrator.state_folder import task_umask

# what a task needs to run programs and speak the user's language (variables and
# connections it asks the worker for: ctx.variable / ctx.connection)
DEFAULT_ALLOW = (
    "PATH,HOME,USER,LOGNAME,SHELL,TERM,LANG,LANGUAGE,LC_*,TZ,TMPDIR,PYTHON*,"
    "SSL_CERT_FILE,SSL_CERT_DIR,REQUESTS_CA_BUNDLE"
)
DEFAULT_DENY = "ORCHESTRATOR_*"
# never inherited, whatever task_env_allow says
SETTINGS_SECRETS = (
    "ORCHESTRATOR_DATABASE_URL",
    "ORCHESTRATOR_METRICS_TOKEN",
    "ORCHESTRATOR_WEB_SECRET",
    "ORCHESTRATOR_SECRET_KEY",
    "ORCHESTRATOR_SECRETS_KEY",
    "ORCHESTRATOR_FERNET_KEY",
)
_SECRET_WORDS = ("secret", "token", "password", "key", "database_url")


def _patterns(text: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


def _weight(pattern: str) -> int:
    return len(pattern) - pattern.count("*")


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


def secret_setting_names(names: Iterable[str]) -> tuple[str, ...]:
    """The variables of the settings among ``names`` (field names) that hold secrets."""
    return tuple(
        f"ORCHESTRATOR_{n.upper()}" for n in names if any(w in n.lower() for w in _SECRET_WORDS)
    )


@dataclass(frozen=True)
class EnvPolicy:
    allow: tuple[str, ...] = _patterns(DEFAULT_ALLOW)
    deny: tuple[str, ...] = _patterns(DEFAULT_DENY)
    never: tuple[str, ...] = SETTINGS_SECRETS
    secret_digests: frozenset[str] = frozenset()
    umask: int | None = None  # the command's own umask, not the state folder's 077 (issue 24)

    @classmethod
    def from_settings(
        cls, deny: str | None, allow: str | None, extra: str | None = None
    ) -> EnvPolicy:
        return cls(_patterns(allow) + _patterns(extra), _patterns(deny))

    @classmethod
    def for_settings(cls, settings: Any) -> EnvPolicy:
        """The policy of ``settings`` (task_env_allow / _extra / _deny), with the settings'
        own secrets (by name and by value) withheld."""
        values = settings.as_dict()
        secret_fields = [n for n in values if any(w in n.lower() for w in _SECRET_WORDS)]
        digests = frozenset(
            _digest(v) for n in secret_fields if isinstance(v := values[n], str) and len(v) >= 6
        )
        base = cls.from_settings(
            settings.task_env_deny, settings.task_env_allow, getattr(settings, "task_env_extra", "")
        )
        never = tuple(dict.fromkeys(SETTINGS_SECRETS + secret_setting_names(secret_fields)))
        return cls(base.allow, base.deny, never, digests, task_umask())

    def inherits(self, name: str, value: str | None = None) -> bool:
        if name in self.never:
            return False
        if value is not None and self.secret_digests and _digest(value) in self.secret_digests:
            return False
        allowed = max((_weight(p) for p in self.allow if fnmatchcase(name, p)), default=-1)
        if allowed < 0:
            return False
        denied = max((_weight(p) for p in self.deny if fnmatchcase(name, p)), default=-1)
        return allowed > denied

    def filter(self, environ: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in environ.items() if self.inherits(k, v)}

    def apply_to_this_process(self) -> None:
        """Drop what a task may not inherit from ``os.environ`` (a task or parse child,
        at start), so a Python task does not see it and a command does not inherit it."""
        for name in [k for k, v in os.environ.items() if not self.inherits(k, v)]:
            del os.environ[name]
        if self.umask is not None:
            os.umask(self.umask)
