"""The key that encrypts secrets in the database (Fernet), and where it comes from.

The key is the setting ``secrets_key`` (``ORCHESTRATOR_SECRETS_KEY``): one or more
Fernet keys, comma-separated, newest first. Without it, the 0600 file
``<state_dir>/secrets_key`` holds them (one a line), created once on first use
(``standalone``, ``db init``/``db upgrade``, the first secret stored). Every key
decrypts; the first encrypts (``MultiFernet``), so a rotation lists the new key first
and ``orchestrator secrets rotate-key`` re-encrypts every value with it.

A token no key decrypts is refused with :class:`SecretsKeyError` naming the value and
where the key came from: never garbage, never a silent empty value.

>>> box = SecretBox([Fernet.generate_key().decode()], "a test key")
>>> box.decrypt(box.encrypt("s3cret"), "variable x")
's3cret'
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
import threading

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from orchestrator.errors import ConfigError

log = logging.getLogger(__name__)

KEY_FILE = "secrets_key"


class SecretsKeyError(ConfigError):
    """The secrets key is missing, malformed, or not the one a value was encrypted with."""


class SecretBox:
    def __init__(self, keys: list[str], source: str) -> None:
        if not keys:
            raise SecretsKeyError(f"{source}: no secrets key")
        fernets = []
        for i, key in enumerate(keys, 1):
            try:
                fernets.append(Fernet(key.strip().encode()))
            except (ValueError, TypeError):
                raise SecretsKeyError(
                    f"{source}: key {i} is not a Fernet key (32 url-safe base64-encoded "
                    "bytes, as `python -c 'from cryptography.fernet import Fernet; "
                    "print(Fernet.generate_key().decode())'` prints)"
                ) from None
        self.keys = [k.strip() for k in keys]
        self.source = source
        self._fernet = MultiFernet(fernets)

    def encrypt(self, text: str) -> str:
        return self._fernet.encrypt(text.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str, what: str) -> str:
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError, ValueError):
            raise SecretsKeyError(
                f"cannot decrypt {what}: the secrets key ({self.source}) is not the key it "
                "was encrypted with; set ORCHESTRATOR_SECRETS_KEY (or the key file) to that "
                "key, listing the new key first when rotating"
            ) from None

    def rotate(self, token: str, what: str) -> str:
        """``token`` encrypted again with the first key."""
        self.decrypt(token, what)  # the clear message, not InvalidToken
        return self._fernet.rotate(token.encode("ascii")).decode("ascii")


_cache: dict[tuple, SecretBox] = {}
_lock = threading.Lock()


def key_file(state_dir: str, path: str | None = None) -> str:
    """``path`` (the ``secrets_key_file`` setting), else ``<state_dir>/secrets_key``."""
    return path or os.path.join(state_dir, KEY_FILE)


def load_box(
    secrets_key: str | None,
    state_dir: str,
    *,
    create: bool = True,
    path: str | None = None,
) -> SecretBox:
    """The box of the setting, else of the key file (``path``, default
    ``<state_dir>/secrets_key``; made if missing and ``create``). The file is read
    again when it changes (after ``rotate-key``)."""
    if secrets_key:
        keys = [k for k in secrets_key.split(",") if k.strip()]
        ident: tuple = ("setting", tuple(keys))
        with _lock:
            if ident not in _cache:
                _cache[ident] = SecretBox(keys, "ORCHESTRATOR_SECRETS_KEY")
            return _cache[ident]
    path = key_file(state_dir, path)
    if not os.path.exists(path):
        if not create:
            raise SecretsKeyError(f"no secrets key: {path} does not exist")
        create_key_file(path)
    info = os.stat(path)
    ident = ("file", path, info.st_mtime_ns, info.st_size, info.st_ino)
    with _lock:
        if ident not in _cache:
            _cache[ident] = SecretBox(read_key_file(path), path)
        return _cache[ident]


def box_of(settings: object, *, create: bool = True) -> SecretBox:
    """The box for a :class:`~orchestrator.settings.Settings`."""
    return load_box(
        getattr(settings, "secrets_key", None),
        settings.state_dir,
        create=create,  # type: ignore[attr-defined]
        path=getattr(settings, "secrets_key_file", None),
    )


def create_key_file(path: str, keys: list[str] | None = None) -> None:
    """Write a new key file atomically (mode 0600); a concurrent creator's file wins
    when ``keys`` is None (first creation), else the file is replaced."""
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(keys or [Fernet.generate_key().decode()]) + "\n")
            f.flush()
            os.fsync(f.fileno())
        if keys is None:
            try:
                os.link(tmp, path)
                log.info("created the secrets key in %s", path)
            except FileExistsError:
                pass  # another process made it first: use theirs
        else:
            os.replace(tmp, path)
            tmp = ""
    finally:
        if tmp:
            os.unlink(tmp)


def read_key_file(path: str) -> list[str]:
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        log.warning("%s was readable by others (mode %o); setting mode 600", path, mode)
        os.chmod(path, 0o600)
    with open(path) as f:
        return [k.strip() for k in f.read().replace(",", "\n").splitlines() if k.strip()]
