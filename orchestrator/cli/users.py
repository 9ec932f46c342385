"""``orchestrator users ...``: logins for the web UI (needed when it binds beyond loopback)."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from orchestrator.cli.common import Parents, emit, open_store
from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError
from orchestrator.settings import Settings


def register(sub: Any, parents: Parents) -> None:
    users = sub.add_parser("users", help="web UI logins").add_subparsers(
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
    p = parents.add(users, "delete", "delete a web UI login (its sessions end at once)")
    p.add_argument("username")
    parents.add(users, "list", "list web UI logins", json_output=True)
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
    if args.action == "list":
        rows = [{"username": u, "created_at": at} for u, at in store.list_users()]
        emit(args, rows, rows, ("username", "created_at"))
        return 0
    if args.action == "delete":
        store.delete_user(args.username, now)
        print(f"user {args.username} deleted")
        return 0
    password = read_password(args.password_stdin)
    if args.action == "add":
        store.add_user(args.username, password, now)
        print(f"user {args.username} added")
    else:
        store.set_password(args.username, password, now)
        print(f"password of {args.username} changed")
    return 0
