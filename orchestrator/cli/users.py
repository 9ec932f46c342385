"""``orchestrator users ...``: web UI logins, their roles, and API tokens."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from orchestrator.cli.common import Parents, cli_actor, emit, open_store
from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError
from orchestrator.roles import ROLES
from orchestrator.settings import Settings

ROLE_HELP = "viewer (read), operator (also trigger, clear, mark, pause, backfill, cancel), admin"


def register(sub: Any, parents: Parents) -> None:
    users = sub.add_parser("users", help="web UI logins, roles and API tokens").add_subparsers(
        dest="action", required=True
    )
    for action, help_ in (
        ("add", "create a web UI login"),
        ("password", "change a password (and end the user's sessions)"),
    ):
        p = parents.add(users, action, help_)
        p.add_argument("username")
        p.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from the first line of stdin instead of prompting",
        )
        if action == "add":
            p.add_argument("--role", choices=ROLES, default="viewer", help=ROLE_HELP)
    p = parents.add(users, "delete", "delete a web UI login (its sessions and tokens end at once)")
    p.add_argument("username")
    parents.add(users, "list", "list web UI logins and their roles", json_output=True)
    p = parents.add(users, "role", "give a user another role")
    p.add_argument("username")
    p.add_argument("role", help=" | ".join(ROLES))
    p = parents.add(users, "token", "make an API token for a user (printed once)", json_output=True)
    p.add_argument("username")
    p.add_argument("--expires", default="90d", help="lifetime: 90d (default), 12h, 30m, or never")
    p.add_argument(
        "--role", choices=ROLES, default=None, help="at most the user's role (the default)"
    )
    p.add_argument("--name", default=None, help="a label, unique per user (default: the id)")
    p = parents.add(
        users, "tokens", "list a user's API tokens (never their secrets)", json_output=True
    )
    p.add_argument("username")
    p = parents.add(users, "revoke", "revoke an API token (401 from its next request)")
    p.add_argument("token_id", help="the id `users tokens` lists (or the whole token)")
    for choice in users.choices.values():
        choice.set_defaults(handler=cmd_users)


def read_password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("Password: ")
    if first != getpass.getpass("Repeat password: "):
        raise ConfigError("the two passwords differ")
    return first


def cmd_users(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(settings)
    now = SystemClock().now()
    who = cli_actor()
    if args.action == "list":
        rows = [
            {"username": u, "role": role, "created_at": at}
            for u, role, at in store.list_user_roles()
        ]
        emit(args, rows, rows, ("username", "role", "created_at"))
        return 0
    if args.action == "delete":
        store.delete_user(args.username, now, who=who)
        print(f"user {args.username} deleted")
        return 0
    if args.action == "role":
        was = store.set_role(args.username, args.role, now, who=who)
        print(f"{args.username} is {args.role} (was {was})")
        return 0
    if args.action in ("token", "tokens", "revoke"):
        return _tokens(args, store, now, who)
    password = read_password(args.password_stdin)
    if args.action == "add":
        store.add_user(args.username, password, now, role=args.role, who=who)
        print(f"user {args.username} added as {args.role}")
    else:
        store.set_password(args.username, password, now, who=who)
        print(f"password of {args.username} changed")
    return 0


def _tokens(args: argparse.Namespace, store: Any, now: Any, who: str) -> int:
    from orchestrator.store.access.token_store import parse_expires  # the store: only when needed

    if args.action == "token":
        made = store.create_token(
            args.username,
            now,
            role=args.role,
            name=args.name,
            expires_in=parse_expires(args.expires),
            who=who,
        )
        expires = made.expires_at.isoformat(timespec="seconds") if made.expires_at else "never"
        if args.json:
            emit(args, {"token_id": made.token_id, "token": made.token, "name": made.name,
                        "role": made.role, "expires_at": made.expires_at})  # fmt: skip
            return 0
        print(made.token)
        print(
            f"token {made.token_id} ({made.name}, {made.role}) of {args.username}, expires "
            f"{expires}: shown this once; send it as 'Authorization: Bearer <token>'",
            file=sys.stderr,
        )
        return 0
    if args.action == "tokens":
        rows = [
            {
                "token_id": t.token_id,
                "name": t.name,
                "role": t.role,
                "created_at": t.created_at,
                "expires_at": t.expires_at,
                "last_used_at": t.last_used_at,
                "revoked_at": t.revoked_at,
            }
            for t in store.list_tokens(args.username)
        ]
        emit(args, rows, rows, tuple(rows[0]) if rows else ("token_id", "name", "role"))
        return 0
    if store.revoke_token(args.token_id, now, who=who):
        print(f"token {args.token_id} revoked")
    else:
        print(f"token {args.token_id} was revoked already")
    return 0
