"""Variables and connections as tasks and templates see them: names, URIs, sensitivity.

A connection is Airflow's: ``conn_type``, ``host``, ``login``, ``password``, ``port``,
``schema`` and an ``extra`` JSON object, written as a URI with Airflow's rules (login,
password, host and schema percent-encoded; the query string is the extra, or
``?__extra__=<JSON>`` when the extra is not a flat object of strings; a host holding
its own protocol as in ``http://https%3A%2F%2Fexample.com``... is ``http://https://``).

>>> c = Connection.from_uri("warehouse", "postgresql://etl:s%40cret@db.internal:5432/sales")
>>> c.conn_type, c.login, c.password, c.host, c.port, c.schema
('postgresql', 'etl', 's@cret', 'db.internal', 5432, 'sales')
>>> c.uri
'postgresql://etl:s%40cret@db.internal:5432/sales'
>>> is_sensitive_name("api_token"), is_sensitive_name("region")
(True, False)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from orchestrator.errors import ConfigError, OrchestratorError

NAME = re.compile(r"[A-Za-z0-9_.\-]{1,250}")
# Airflow's DEFAULT_SENSITIVE_FIELDS, the parts of names that make a value a secret
SENSITIVE_WORDS = (
    "access_token",
    "api_key",
    "apikey",
    "authorization",
    "passphrase",
    "passwd",
    "password",
    "private_key",
    "secret",
    "token",
    "keyfile_dict",
    "service_account",
    "key",
)
EXTRA_KEY = "__extra__"


class CredentialNotFoundError(OrchestratorError, LookupError):
    """A task or template asked for a variable or connection that exists nowhere."""


class CredentialReadError(OrchestratorError):
    """A variable or connection exists but cannot be read (not JSON, wrong key, ...)."""


def is_sensitive_name(name: str) -> bool:
    """True for names like ``*password*``, ``*secret*``, ``*token*``, ``*key*``."""
    lowered = name.lower()
    return any(word in lowered for word in SENSITIVE_WORDS)


def check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ConfigError(
            f"{what} name {name!r}: use 1-250 letters, digits and '_', '.', '-' characters"
        )
    return name


@dataclass(frozen=True)
class Connection:
    """A connection's fields; ``extra`` is a dict (``extra_dejson`` as in Airflow)."""

    conn_id: str
    conn_type: str
    host: str | None = None
    login: str | None = None
    password: str | None = field(default=None, repr=False)
    port: int | None = None
    schema: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    description: str | None = None

    def __post_init__(self) -> None:
        check_name(self.conn_id, "connection")
        if not isinstance(self.conn_type, str) or not re.fullmatch(
            r"[A-Za-z][A-Za-z0-9_+.\-]{0,499}", self.conn_type
        ):
            raise ConfigError(
                f"connection {self.conn_id!r}: conn_type {self.conn_type!r} must start "
                "with a letter and hold only letters, digits and '_', '+', '.', '-'"
            )
        if self.port is not None and (
            isinstance(self.port, bool)
            or not isinstance(self.port, int)
            or not 0 < self.port < 65536
        ):
            raise ConfigError(
                f"connection {self.conn_id!r}: port must be 1-65535, got {self.port!r}"
            )
        if not isinstance(self.extra, dict):
            raise ConfigError(
                f"connection {self.conn_id!r}: extra must be a JSON object, "
                f"got {type(self.extra).__name__}"
            )
        for name in ("host", "login", "password", "schema", "description"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"connection {self.conn_id!r}: {name} must be text")
            if value is not None and "\x00" in value:
                raise ConfigError(f"connection {self.conn_id!r}: {name} contains a NUL byte")

    @property
    def extra_dejson(self) -> dict[str, Any]:
        return self.extra

    @property
    def uri(self) -> str:
        return self.get_uri()

    def get_uri(self) -> str:
        """The connection as a URI (Airflow's ``Connection.get_uri``)."""
        uri = f"{self.conn_type.lower().replace('_', '-')}://"
        protocol, host = None, self.host
        if host and "://" in host:
            protocol, host = host.split("://", 1)
        if protocol:
            uri += f"{protocol}://"
        authority = ""
        if self.login is not None:
            authority += quote(self.login, safe="")
        if self.password is not None:
            authority += ":" + quote(self.password, safe="")
        if authority:
            uri += authority + "@"
        block = quote(host, safe="") if host else ""
        if self.port:
            block += f"@:{self.port}" if not block and not authority else f":{self.port}"
        if self.schema:
            block += f"/{quote(self.schema, safe='')}"
        uri += block
        if self.extra:
            lead = "?" if self.schema else "/?"
            flat = all(isinstance(v, str) for v in self.extra.values())
            query = urlencode(self.extra) if flat else ""
            if query and dict(parse_qsl(query, keep_blank_values=True)) == self.extra:
                uri += lead + query
            else:
                uri += lead + urlencode({EXTRA_KEY: json.dumps(self.extra)})
        return uri

    @classmethod
    def from_uri(cls, conn_id: str, uri: str, description: str | None = None) -> Connection:
        """Parse ``uri`` with Airflow's rules; ConfigError naming what is wrong."""
        where = f"connection {conn_id!r}: URI"
        if not isinstance(uri, str) or "://" not in uri:
            raise ConfigError(f"{where} must look like type://login:password@host:port/schema")
        if any(c in uri for c in "\x00\r\n\t "):
            raise ConfigError(f"{where} contains whitespace or control characters")
        count = uri.count("://")
        if count > 2:
            raise ConfigError(f"{where} has {count} '://' (at most two: type:// and a host's)")
        scheme = uri.split("://", 1)[0]
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-_]*", scheme):
            raise ConfigError(f"{where}: {scheme!r} is not a connection type")
        with_protocol = count == 2
        rest = uri[len(scheme) + 3 :]
        if with_protocol:
            first = rest.split("://", 1)[0]
            if "@" in first or ":" in first:
                raise ConfigError(f"{where}: a host protocol cannot hold '@' or ':'")
        else:
            rest = "//" + rest
        try:
            parts = urlsplit(rest)
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        host = _hostname(parts)
        if with_protocol and parts.scheme:
            host = f"{parts.scheme}://{host}"
        extra: dict[str, Any] = {}
        if parts.query:
            query = dict(parse_qsl(parts.query, keep_blank_values=True))
            if EXTRA_KEY in query:
                try:
                    extra = json.loads(query[EXTRA_KEY])
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{where}: {EXTRA_KEY} is not JSON ({exc.msg})") from None
                if not isinstance(extra, dict):
                    raise ConfigError(f"{where}: {EXTRA_KEY} must be a JSON object")
            else:
                extra = query
        schema = unquote(parts.path[1:]) if parts.path[1:] else None
        return cls(
            conn_id=conn_id,
            conn_type=scheme.replace("-", "_"),
            host=host or None,
            login=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            port=port,
            schema=schema,
            extra=extra,
            description=description,
        )

    def fields(self) -> dict[str, Any]:
        """The stored fields (the export/import shape, Airflow's)."""
        return {
            "conn_type": self.conn_type,
            "description": self.description,
            "host": self.host,
            "login": self.login,
            "password": self.password,
            "port": self.port,
            "schema": self.schema,
            "extra": self.extra,
        }

    def secret_values(self) -> list[str]:
        """What is masked wherever this connection was read: the password, the extra's
        JSON text, and every value in the extra under a sensitive key (``api_key``,
        ``token``, ...: Airflow's rule, so ``{"sslmode": "require"}`` does not mask
        every ``require`` of a log)."""
        found: list[str] = []
        if self.password:
            found.append(self.password)
        if self.extra:
            found.append(json.dumps(self.extra))
            found.extend(sensitive_strings(self.extra))
        return found


def leaf_strings(value: Any) -> list[str]:
    """Every string inside a JSON value (dict values, list items), not the keys."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in leaf_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in leaf_strings(v)]
    return []


def sensitive_strings(value: Any) -> list[str]:
    """The strings of a JSON value that sit under a sensitive key, at any depth."""
    if isinstance(value, dict):
        return [
            s
            for k, v in value.items()
            for s in (leaf_strings(v) if is_sensitive_name(str(k)) else sensitive_strings(v))
        ]
    if isinstance(value, list):
        return [s for v in value for s in sensitive_strings(v)]
    return []


def _hostname(parts: Any) -> str:
    """Airflow's ``_parse_netloc_to_hostname``: keeps the case and percent-decodes."""
    netloc = parts.netloc
    host = netloc.rsplit("@", 1)[1] if "@" in netloc else netloc
    if host.startswith("["):  # an IPv6 address
        host = host.split("]", 1)[0] + "]"
    elif ":" in host:
        host = host.split(":", 1)[0]
    return unquote(host)


def connection_from_fields(conn_id: str, data: dict[str, Any]) -> Connection:
    """A connection from the export shape (``conn_type``, ``host``, ..., ``extra``)."""
    if not isinstance(data, dict):
        raise ConfigError(f"connection {conn_id!r}: expected a URI or an object of fields")
    known = {"conn_type", "description", "host", "login", "password", "port", "schema", "extra"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"connection {conn_id!r}: unknown field(s) {', '.join(unknown)}")
    extra = data.get("extra") or {}
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"connection {conn_id!r}: extra is not JSON ({exc.msg})") from None
    port = data.get("port")
    if isinstance(port, str) and port.strip():
        try:
            port = int(port)
        except ValueError:
            raise ConfigError(f"connection {conn_id!r}: port {port!r} is not a number") from None
    return Connection(
        conn_id=conn_id,
        conn_type=data.get("conn_type") or "",
        host=data.get("host") or None,
        login=data.get("login") or None,
        password=data.get("password") or None,
        port=port or None,
        schema=data.get("schema") or None,
        extra=extra,
        description=data.get("description") or None,
    )


# -- what tasks and templates read through -------------------------------------------------
@dataclass(frozen=True)
class VariableValue:
    value: str
    is_json: bool = False
    secret: bool = False


@dataclass(frozen=True)
class CredentialSource:
    """How a task reads credentials: two lookups returning None when nothing is found
    (the worker's chain of backends, reached from the task process)."""

    variable: Callable[[str], VariableValue | None]
    connection: Callable[[str], Connection | None]


def read_variable(source: CredentialSource | None, name: str, deserialize_json: bool) -> Any:
    if source is None:
        raise CredentialNotFoundError(
            f"variable {name!r}: no variables here (this context reads none)"
        )
    found = source.variable(name)
    if found is None:
        raise CredentialNotFoundError(
            f"unknown variable {name!r}: not in ORCHESTRATOR_VAR_{name.upper()}, "
            "the database or the secrets backend"
        )
    if not deserialize_json:
        return found.value
    try:
        return json.loads(found.value)
    except json.JSONDecodeError as exc:
        raise CredentialReadError(f"variable {name!r} is not JSON ({exc.msg})") from None


def read_connection(source: CredentialSource | None, name: str) -> Connection:
    found = source.connection(name) if source is not None else None
    if found is None:
        raise CredentialNotFoundError(
            f"unknown connection {name!r}: not in ORCHESTRATOR_CONN_{name.upper()}, "
            "the database or the secrets backend"
        )
    return found


class _Lookup:
    """``var.value``, ``var.json`` and ``conn`` in templates: attribute or item lookups."""

    def __init__(self, read: Callable[[str], Any]) -> None:
        self._read = read

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._read(name)

    def __getitem__(self, name: str) -> Any:
        return self._read(name)

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self._read(name)
        except CredentialNotFoundError:
            return default


class _Var:
    def __init__(self, source: CredentialSource | None) -> None:
        self.value = _Lookup(lambda n: read_variable(source, n, False))
        self.json = _Lookup(lambda n: read_variable(source, n, True))


def template_credentials(source: CredentialSource | None) -> dict[str, Any]:
    """``{"var": ..., "conn": ...}`` for a template's variables, read only when used."""
    return {"var": _Var(source), "conn": _Lookup(lambda n: read_connection(source, n))}
