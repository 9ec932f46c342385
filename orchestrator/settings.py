"""One frozen settings object, read once from ``ORCHESTRATOR_*`` variables and flags.

Every setting, its variable and its default is listed in ``docs/settings.md``; keep
that table and :data:`FIELDS` in step.

>>> s = Settings.load({"ORCHESTRATOR_LEASE_SECONDS": "20"}, cwd="/srv")
>>> s.lease_seconds, s.dags_folder
(20.0, '/srv/dags')
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any

from orchestrator.errors import ConfigError


def flag(raw: object) -> bool:
    """A yes/no setting: 1/true/yes/on or 0/false/no/off (any case)."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(raw)


flag.__name__ = "yes/no (1, true, yes, on / 0, false, no, off)"

# name -> (type, default, help). Defaults that depend on the state folder are None here.
# numbers that may be 0 (every other one must be > 0)
ZERO_ALLOWED = frozenset({"worker_prefetch"})
FIELDS: dict[str, tuple[type, Any, str]] = {
    "state_dir": (str, ".orchestrator", "folder for the SQLite file, task logs and the web secret"),
    "database_url": (str, None, "SQLAlchemy URL; default sqlite:///<state_dir>/orchestrator.db"),
    "dags_folder": (str, "dags", "folder scanned for DAG files"),
    "lease_seconds": (float, 30.0, "how long a claimed task's lease lasts without a heartbeat"),
    "heartbeat_seconds": (float, 10.0, "how often workers extend their leases"),
    "worker_concurrency": (int, 4, "task processes per worker"),
    "worker_prefetch": (
        int,
        4,
        "task instances a worker claims beyond its free processes while its tries are "
        "short (under 0.25 s), so a process that finishes starts the next at once; 0: never",
    ),
    "scheduler_interval": (float, 1.0, "the longest the scheduler sleeps between ticks"),
    "worker_poll_seconds": (float, 1.0, "the longest an idle worker waits before polling"),
    "drain_seconds": (
        float,
        60.0,
        "on SIGTERM, how long a worker lets running tasks finish before handing them back",
    ),
    "parse_timeout": (float, 30.0, "seconds a DAG file may take to import"),
    "parse_interval": (float, 10.0, "seconds between scans of the dags folder"),
    "max_result_bytes": (int, 65536, "largest JSON return value a task may hand downstream"),
    "web_host": (str, "127.0.0.1", "address the web UI binds to"),
    "web_port": (int, 8080, "port of the web UI"),
    "backfill_max_runs": (
        int,
        1000,
        "most runs one backfill may create without --yes (a typo in a date costs nothing)",
    ),
    "alert_webhook": (str, None, "URL every alert of every DAG is POSTed to (JSON)"),
    "alert_email": (str, None, "comma-separated addresses every alert is mailed to"),
    "smtp_host": (str, "localhost", "SMTP server for email alerts"),
    "smtp_port": (int, 25, "port of the SMTP server"),
    "smtp_from": (str, "orchestrator@localhost", "sender address of email alerts"),
    "metrics_token": (
        str,
        None,
        "bearer token that lets Prometheus scrape /metrics when the UI requires a login",
    ),
    "alert_timeout": (float, 10.0, "seconds one webhook or SMTP attempt may take"),
    "alert_max_attempts": (int, 5, "attempts to deliver an alert before giving up"),
    "alert_interval": (float, 5.0, "seconds between alert watchdog checks"),
    # task processes (log cap, inherited environment)
    "max_log_bytes": (
        int,
        10 * 1024 * 1024,
        "largest log one try may write; past it output is dropped behind a marker line",
    ),
    "task_env_deny": (
        str,
        "ORCHESTRATOR_*",
        "comma-separated glob patterns of worker environment variables tasks do not inherit "
        "even when allowed (the more specific of two matching patterns decides)",
    ),
    "task_env_allow": (
        str,
        "PATH,HOME,USER,LOGNAME,SHELL,TERM,LANG,LANGUAGE,LC_*,TZ,TMPDIR,PYTHON*,SSL_CERT_FILE,"
        "SSL_CERT_DIR,REQUESTS_CA_BUNDLE",
        "comma-separated glob patterns of the worker environment variables tasks inherit "
        "(an allow-list: nothing else reaches a task)",
    ),
    # tries lost to infrastructure
    "max_lost_tries": (
        int,
        2,
        "tries of a task lost to infrastructure (lease expired, handed back) retried "
        "without spending its retries; a DAG or task may set its own max_lost_tries",
    ),
    # web UI hardening (issue 12: hosts, logins, sessions, throttling, size limits)
    "web_allowed_hosts": (
        str,
        None,
        "comma-separated extra Host names the UI answers (besides 127.0.0.1, localhost, "
        "[::1] and web_host); '.example.com' also allows its subdomains",
    ),
    "web_login": (str, "auto", "'auto': login only beyond loopback; 'always': on loopback too"),
    "web_session_idle_seconds": (
        float,
        28800.0,
        "a signed-in session unused this long has to log in again",
    ),
    "web_session_max_seconds": (
        float,
        604800.0,
        "a signed-in session this old has to log in again, however busy (absolute lifetime)",
    ),
    "web_trusted_proxy": (
        str,
        None,
        "address of the reverse proxy whose X-Forwarded-For/-Proto/-Host headers are believed",
    ),
    "web_secure_cookie": (
        str,
        "auto",
        "'auto': Secure session cookie on HTTPS requests (also via the trusted proxy); "
        "'always'; 'never'",
    ),
    "web_max_body_bytes": (int, 1048576, "largest request body the web UI reads (413 beyond)"),
    "max_conf_bytes": (int, 65536, "largest run conf (as JSON) a trigger may store"),
    "web_login_max_failures": (
        int,
        5,
        "wrong logins of one (user name, address) pair within the window before that pair is refused",
    ),
    "web_login_max_failures_per_address": (
        int,
        20,
        "wrong logins from one client address within the window before its logins are slowed",
    ),
    "web_login_window_seconds": (float, 300.0, "the window login failures are counted in"),
    # the hard limit of one backfill (issue 13, item 6)
    "backfill_hard_max_runs": (
        int,
        100_000,
        "most runs one backfill may create, even with --yes: split bigger ranges",
    ),
    # durable commits, bounded database waits, /health thresholds
    "sqlite_synchronous": (
        str,
        "FULL",
        "SQLite synchronous mode: FULL (an acknowledged write survives an OS crash) or NORMAL",
    ),
    "db_lock_timeout": (
        float,
        None,
        "PostgreSQL: longest wait for a lock, seconds; default lease_seconds / 10",
    ),
    "db_statement_timeout": (
        float,
        None,
        "PostgreSQL: longest statement, seconds; default lease_seconds / 3",
    ),
    "db_idle_in_transaction_timeout": (
        float,
        None,
        "PostgreSQL: a session idle inside a transaction this long is ended and its locks "
        "released, seconds; default lease_seconds / 10",
    ),
    "db_keepalive_seconds": (
        float,
        None,
        "PostgreSQL: TCP keepalive idle time on both ends, seconds; default lease_seconds / 6",
    ),
    "db_slow_statement_seconds": (
        float,
        None,
        "log each database statement slower than this, seconds, naming it and why it gave "
        "up (a lock wait, a timeout); off by default: for finding what waits on whom",
    ),
    "health_min_free_mb": (
        float,
        100.0,
        "/health fails when the disk of the state folder or SQLite file has less free space",
    ),
    # issue 12: the web server's threads
    "web_threads": (
        int,
        8,
        "threads of the web server: requests in flight at once (a probe or a poll does not "
        "queue behind slow page renders while one is free)",
    ),
    # issue 16: a task's environment, Python environments per task
    "task_env_extra": (
        str,
        "",
        "comma-separated glob patterns tasks inherit besides task_env_allow (your own "
        "variables, without repeating the defaults)",
    ),
    "venv_cache_dir": (
        str,
        None,
        "folder of the virtual environments @task.virtualenv builds; default <state_dir>/venvs",
    ),
    "venv_installer": (
        str,
        "auto",
        "what builds them: 'auto' (uv when on PATH, else python -m venv and pip), 'uv', 'pip'",
    ),
    "alert_slack": (
        str,
        None,
        "Slack incoming-webhook URL every alert of every DAG is posted to",
    ),
    # issue 17: logs from any machine (log chunks shipped to the store)
    "log_ship_seconds": (
        float,
        1.0,
        "how often a worker ships what its running tries' logs gained to the store",
    ),
    # issue 16: variables, connections, secrets at rest
    "secrets_key": (
        str,
        None,
        "Fernet key(s), comma-separated, newest first, that encrypt secrets in the database; "
        "default: the 0600 file <state_dir>/secrets_key, created on first use",
    ),
    "secrets_backend": (
        str,
        None,
        "module:Class of a secrets backend asked after the environment and the database",
    ),
    "secrets_backend_kwargs": (str, None, "JSON object of keyword arguments for secrets_backend"),
    # issue 14: runtime task mapping
    "max_map_length": (
        int,
        10_000,
        "most task instances one mapped task may expand into in one run",
    ),
    # issue 24: a chain of runs made by trigger_dag tasks stops at this depth
    "max_trigger_depth": (
        int,
        10,
        "most runs one chain of trigger_dag tasks may create in a row (a run made by a "
        "trigger_dag task of a run made so, and so on); the task past it fails",
    ),
    # issue 30: deferrable tasks and asset watchers
    "triggerer_capacity": (int, 10_000, "most triggers one triggerer runs at once"),
    "triggerer_block_seconds": (
        float,
        0.5,
        "a triggerer's event loop blocked this long is named in the log and metrics; "
        "at twice this its other triggers move to a fresh loop",
    ),
    "watcher_max_backoff": (
        float,
        30.0,
        "longest wait, seconds, between an asset watcher's reconnects to its broker",
    ),
    # issue 24: task isolation, keys outside the state folder
    "task_user": (
        str,
        None,
        "OS user the worker runs task processes (and DAG file imports) as; the worker "
        "must run as root to switch to it",
    ),
    "allow_root_tasks": (
        flag,
        False,
        "let a worker running as root, without task_user, run tasks as root",
    ),
    "secrets_key_file": (
        str,
        None,
        "file of the Fernet key(s) when secrets_key is not set; default <state_dir>/secrets_key",
    ),
    "web_secret_file": (
        str,
        None,
        "file of the key that signs web UI sessions; default <state_dir>/webui_secret",
    ),
}


@dataclass(frozen=True)
class Settings:
    state_dir: str
    database_url: str
    dags_folder: str
    lease_seconds: float
    heartbeat_seconds: float
    worker_concurrency: int
    worker_prefetch: int
    scheduler_interval: float
    worker_poll_seconds: float
    drain_seconds: float
    parse_timeout: float
    parse_interval: float
    max_result_bytes: int
    web_host: str
    web_port: int
    backfill_max_runs: int
    alert_webhook: str | None
    alert_email: str | None
    smtp_host: str
    smtp_port: int
    smtp_from: str
    metrics_token: str | None
    alert_timeout: float
    alert_max_attempts: int
    alert_interval: float
    # task processes (log cap, inherited environment)
    max_log_bytes: int
    task_env_deny: str
    task_env_allow: str
    # tries lost to infrastructure
    max_lost_tries: int
    # web UI hardening (issue 12)
    web_allowed_hosts: str | None
    web_login: str
    web_session_idle_seconds: float
    web_trusted_proxy: str | None
    web_secure_cookie: str
    web_max_body_bytes: int
    max_conf_bytes: int
    web_login_max_failures: int
    web_login_max_failures_per_address: int
    web_login_window_seconds: float
    # the hard limit of one backfill (issue 13, item 6)
    backfill_hard_max_runs: int
    # durable commits, bounded database waits, /health thresholds
    sqlite_synchronous: str
    db_lock_timeout: float | None
    db_statement_timeout: float | None
    db_idle_in_transaction_timeout: float | None
    db_keepalive_seconds: float | None
    db_slow_statement_seconds: float | None
    health_min_free_mb: float
    # issue 12: the web server's threads
    web_threads: int
    # issue 16: a task's environment, Python environments per task
    task_env_extra: str
    venv_cache_dir: str | None
    venv_installer: str
    alert_slack: str | None
    # issue 17: logs from any machine (log chunks shipped to the store)
    log_ship_seconds: float
    # issue 16: variables, connections, secrets at rest
    secrets_key: str | None
    secrets_backend: str | None
    secrets_backend_kwargs: str | None
    # issue 14: runtime task mapping
    max_map_length: int = 10_000
    # issue 24: trigger_dag chains
    max_trigger_depth: int = 10
    # issue 30: deferrable tasks and asset watchers
    triggerer_capacity: int = 10_000
    triggerer_block_seconds: float = 0.5
    watcher_max_backoff: float = 30.0
    # issue 24: the absolute lifetime of a web session
    web_session_max_seconds: float = 604800.0
    # issue 24: task isolation, keys outside the state folder
    task_user: str | None = None
    allow_root_tasks: bool = False
    secrets_key_file: str | None = None
    web_secret_file: str | None = None

    @property
    def log_dir(self) -> str:
        return os.path.join(self.state_dir, "logs")

    @classmethod
    def load(
        cls,
        environ: dict[str, str] | None = None,
        cwd: str | None = None,
        **overrides: Any,
    ) -> Settings:
        """Defaults, then ``ORCHESTRATOR_*`` variables, then non-None ``overrides``."""
        environ = dict(os.environ if environ is None else environ)
        cwd = cwd or os.getcwd()
        values: dict[str, Any] = {}
        for name, (kind, default, _help) in FIELDS.items():
            raw = overrides.get(name)
            source = f"--{name.replace('_', '-')}"
            if raw is None:
                raw = environ.get(f"ORCHESTRATOR_{name.upper()}")
                source = f"ORCHESTRATOR_{name.upper()}"
            if raw is None:
                values[name] = default
                continue
            try:
                value = kind(raw)
            except (TypeError, ValueError):
                raise ConfigError(f"{source}: expected {kind.__name__}, got {raw!r}") from None
            if kind is flag:
                values[name] = value
                continue
            if kind in (int, float) and (value < 0 if name in ZERO_ALLOWED else value <= 0):
                bound = ">= 0" if name in ZERO_ALLOWED else "> 0"
                raise ConfigError(f"{source}: must be {bound}, got {raw!r}")
            values[name] = value
        values["state_dir"] = os.path.abspath(os.path.join(cwd, values["state_dir"]))
        values["dags_folder"] = os.path.abspath(os.path.join(cwd, values["dags_folder"]))
        if not values["database_url"]:
            path = os.path.join(values["state_dir"], "orchestrator.db")
            values["database_url"] = f"sqlite:///{path}"
        for name in ("secrets_key_file", "web_secret_file"):  # issue 24
            if values[name]:
                values[name] = os.path.abspath(os.path.join(cwd, values[name]))
        # issue 16: the virtualenv cache folder and its builder
        venvs = values["venv_cache_dir"] or os.path.join(values["state_dir"], "venvs")
        values["venv_cache_dir"] = os.path.abspath(os.path.join(cwd, venvs))
        if values["venv_installer"] not in ("auto", "uv", "pip"):
            raise ConfigError(
                f"ORCHESTRATOR_VENV_INSTALLER: expected auto, uv or pip, "
                f"got {values['venv_installer']!r}"
            )
        if values["heartbeat_seconds"] >= values["lease_seconds"]:
            raise ConfigError(
                f"heartbeat_seconds ({values['heartbeat_seconds']}) must be shorter than "
                f"lease_seconds ({values['lease_seconds']})"
            )
        return cls(**values)

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
