"""``orchestrator secrets rotate-key``: encrypt every stored secret with a new key.

With the key file (``<state_dir>/secrets_key``, the default), a new key is made and
written first in the file, every secret is encrypted again with it in one
transaction, and then the old key is dropped from the file. With the setting
``ORCHESTRATOR_SECRETS_KEY``, put the new key first (``NEW,OLD``) and run this; then
remove the old key from the setting.
"""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.cli.common import Parents, open_store
from orchestrator.settings import Settings


def register(sub: Any, parents: Parents) -> None:
    group = sub.add_parser("secrets", help="the key that encrypts secrets").add_subparsers(
        dest="action", required=True
    )
    parents.add(group, "rotate-key", "re-encrypt every secret with a new key").set_defaults(
        handler=cmd_secrets
    )


def cmd_secrets(args: argparse.Namespace, settings: Settings) -> int:
    from cryptography.fernet import Fernet

    from orchestrator.store.credentials.secret_box import (
        box_of,
        create_key_file,
        key_file,
        load_box,
        read_key_file,
    )

    store = open_store(settings)
    if settings.secrets_key:
        box = box_of(settings)
        store.check_secrets_key(box)
        variables, connections = store.rotate_secrets_key(box)
        print(
            f"re-encrypted {variables} variable(s) and {connections} connection(s) with the "
            "first key of ORCHESTRATOR_SECRETS_KEY; the other keys may now be removed"
        )
        return 0
    path = key_file(settings.state_dir, settings.secrets_key_file)
    old = box_of(settings)  # made if missing: then there is nothing to re-encrypt
    store.check_secrets_key(old)
    new_key = Fernet.generate_key().decode()
    create_key_file(path, [new_key, *read_key_file(path)])  # both decrypt meanwhile
    variables, connections = store.rotate_secrets_key(load_box(None, settings.state_dir, path=path))
    create_key_file(path, [new_key])
    print(
        f"re-encrypted {variables} variable(s) and {connections} connection(s) with a new "
        f"key in {path}; the old key is gone (restart workers and web servers that run "
        "elsewhere with a copy of the file)"
    )
    return 0
