"""``orchestrator connections ...``: how tasks reach other systems.

``add NAME --uri URI`` or ``add NAME --conn-type T [--host --login --password --port
--schema --extra]``; a name that exists is refused (delete it first, or ``import
--overwrite``). ``get`` and ``list`` show the password and the extra as ``***``
(``get --reveal`` shows them); ``export`` writes them to a 0600 file.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from orchestrator.authoring.credentials import Connection, connection_from_fields
from orchestrator.cli.common import Parents, emit, open_store, parse_json_object, whole
from orchestrator.cli.variables import read_json_file, report_to, where, write_private
from orchestrator.clock import SystemClock
from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.settings import Settings

COLUMNS = ("conn_id", "conn_type", "host", "login", "password", "port", "schema", "extra")


def register(sub: Any, parents: Parents) -> None:
    group = sub.add_parser(
        "connections", help="connections: hosts and credentials tasks use"
    ).add_subparsers(dest="action", required=True)
    p = parents.add(group, "add", "add a connection from a URI or from fields")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--uri", default=None, help="type://login:password@host:port/schema?extra")
    p.add_argument("--conn-type", default=None)
    p.add_argument("--host", dest="conn_host", default=None)
    p.add_argument("--login", default=None)
    p.add_argument("--password", default=None, help="(visible to ps; see --password-stdin)")
    p.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    p.add_argument("--port", dest="conn_port", type=whole(1, 65535), default=None)
    p.add_argument("--schema", default=None)
    p.add_argument("--extra", default=None, help="a JSON object")
    p.add_argument("--description", default=None)
    p = parents.add(group, "get", "show a connection (password and extra as ***)", json_output=True)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--reveal", action="store_true", help="show the password and extra")
    parents.add(group, "list", "list the database's connections", json_output=True)
    p = parents.add(group, "delete", "delete a connection")
    p.add_argument("name", metavar="NAME")
    p = parents.add(group, "import", "import connections from a JSON file, all or none")
    p.add_argument("file", metavar="FILE", help="the JSON file to read; - for standard input")
    p.add_argument("--overwrite", action="store_true", help="replace connections that exist")
    p = parents.add(group, "export", "write every connection to a JSON file (mode 600)")
    p.add_argument(
        "file", metavar="FILE", help="the file to write (mode 600); - for standard output"
    )
    for choice in group.choices.values():
        choice.set_defaults(handler=cmd_connections)


def _from_args(args: argparse.Namespace) -> Connection:
    if args.password_stdin:
        if args.password is not None:
            raise ConfigError("--password-stdin: give the password once, not with --password")
        args.password = sys.stdin.readline().rstrip("\r\n") or None
    fields = (args.conn_type, args.conn_host, args.login, args.password, args.conn_port,
              args.schema, args.extra)  # fmt: skip
    if args.uri is not None:
        if any(f is not None for f in fields):
            raise ConfigError("--uri: give either --uri or the fields (--conn-type ...), not both")
        return Connection.from_uri(args.name, args.uri, args.description)
    if args.conn_type is None:
        raise ConfigError("give --uri URI, or --conn-type TYPE with the other fields")
    return connection_from_fields(
        args.name,
        {
            "conn_type": args.conn_type,
            "host": args.conn_host,
            "login": args.login,
            "password": args.password,
            "port": args.conn_port,
            "schema": args.schema,
            "extra": parse_json_object(args.extra, "--extra"),
            "description": args.description,
        },
    )


def shown(conn: Connection, reveal: bool) -> dict[str, Any]:
    data = conn.fields() | {"conn_id": conn.conn_id}
    if not reveal:
        hidden = {"password": None, "extra": {}}
        if conn.password is not None:
            data["password"] = "***"
            hidden["password"] = "***"
        if conn.extra:
            data["extra"] = "***"
            hidden["extra"] = {"***": "***"}
        masked = Connection(**{**conn.fields(), **hidden, "conn_id": conn.conn_id})
        data["uri"] = masked.uri.replace("%2A%2A%2A", "***")
    else:
        data["uri"] = conn.uri
    return data


def cmd_connections(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.store.credentials.secret_box import box_of

    if args.action == "add":
        conn = _from_args(args)  # checked before the database is opened
        open_store(settings).add_connection(conn, SystemClock().now(), box_of(settings))
        print(f"connection {args.name} added")
        return 0
    store = open_store(settings)
    now = SystemClock().now()
    if args.action == "get":
        from orchestrator.engine.secrets_chain import SecretsChain

        found = SecretsChain(store, settings).connection(args.name)
        if found is None:
            raise NotFoundError(f"no connection {args.name!r}")
        data = shown(found, args.reveal)
        emit(args, data, [data], (*COLUMNS, "uri"))
        return 0
    if args.action == "list":
        rows = store.list_connections()
        emit(args, rows, rows, COLUMNS)
        return 0
    if args.action == "delete":
        store.delete_connection(args.name, now)
        print(f"connection {args.name} deleted")
        return 0
    if args.action == "import":
        data = read_json_file(args.file)
        if not isinstance(data, dict):
            raise ConfigError(f"{args.file}: expected a JSON object of name -> URI or fields")
        conns = [
            Connection.from_uri(name, value) if isinstance(value, str)
            else connection_from_fields(name, value)
            for name, value in data.items()
        ]  # fmt: skip
        count = store.import_connections(conns, now, box_of(settings), overwrite=args.overwrite)
        print(f"imported {count} connection(s) from {where(args.file, 'in')}")
        return 0
    conns = store.export_connections(box_of(settings))
    write_private(args.file, {c.conn_id: c.fields() for c in conns})
    print(f"exported {len(conns)} connection(s) to {where(args.file)}", file=report_to(args.file))
    return 0
