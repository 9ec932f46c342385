"""API token checks: what a valid, an unknown, a wrong, a malformed, an expired and a
revoked token cost, so the answer time can be seen to say nothing about which it was.

Times ``Store.authenticate_token`` (one indexed read, one sha256, one constant-time
compare; a valid token's ``last_used_at`` write happens at most once a minute, so it
is outside the loop after the first call), interleaving the kinds so drift on a shared
machine hits them alike. Prints the median and p90 in microseconds per kind; asserts
no times.

    python bench/token_auth.py                       # SQLite
    python bench/token_auth.py --backend postgres    # PostgreSQL on 127.0.0.1:5432
    python bench/token_auth.py --rounds 5000
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine, text

from orchestrator.store import Store
from orchestrator.store.core.db import upgrade

PG_ADMIN = os.environ.get(
    "ORCHESTRATOR_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _url(backend: str) -> tuple[str, object]:
    if backend == "sqlite":
        folder = tempfile.mkdtemp()
        return f"sqlite:///{folder}/bench.db", None
    name = f"bench_tokens_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + name, (admin, name)


def _drop(cleanup: object) -> None:
    if cleanup is None:
        return
    admin, name = cleanup  # type: ignore[misc]
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def bench(backend: str, rounds: int, tokens: int) -> None:
    url, cleanup = _url(backend)
    upgrade(url)
    store = Store(url)
    try:
        store.add_user("ada", "long enough password", NOW)
        for i in range(tokens):  # a table of some size, so the lookup is a real probe
            store.create_token("ada", NOW, name=f"t{i}")
        valid = store.create_token("ada", NOW, name="valid", expires_in=timedelta(days=1))
        expired = store.create_token("ada", NOW, name="expired", expires_in=timedelta(minutes=1))
        revoked = store.create_token("ada", NOW, name="revoked")
        store.revoke_token(revoked.token_id, NOW)
        secret = valid.token.split("_", 2)[2]
        kinds = {
            "valid": valid.token,
            "unknown id": "orc_0123456789ab_" + secret,
            "wrong secret": valid.token[:-6] + "AAAAAA",
            "malformed": "orc_not-a-token",
            "expired": expired.token,
            "revoked": revoked.token,
        }
        at = NOW + timedelta(minutes=5)  # valid is valid, expired has expired
        store.authenticate_token(valid.token, at)  # its once-a-minute write, done
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for _ in range(rounds):
            for kind, token in kinds.items():
                t0 = time.perf_counter()
                store.authenticate_token(token, at)
                times[kind].append((time.perf_counter() - t0) * 1e6)
        print(f"{backend}: {rounds} rounds, {tokens + 3} tokens stored")
        for kind, values in times.items():
            values.sort()
            p90 = values[int(len(values) * 0.9)]
            print(f"  {kind:<13} median {statistics.median(values):8.1f} us   p90 {p90:8.1f} us")
    finally:
        store.dispose()
        _drop(cleanup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "all"), default="sqlite")
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--tokens", type=int, default=1000)
    args = parser.parse_args()
    for backend in ("sqlite", "postgres") if args.backend == "all" else (args.backend,):
        bench(backend, args.rounds, args.tokens)


if __name__ == "__main__":
    main()
