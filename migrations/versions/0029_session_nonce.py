"""a random nonce per user row, carried by its sessions (issue 24, item 3)

``users.session_version`` restarts at 0 with a new row, so a cookie saved from a
deleted user worked again once a user of the same name was added. Each row gets a
random ``session_nonce`` at creation; a session carries it and is refused when the
row it names has another one (a deleted and re-added user has a new nonce).
Existing rows get a nonce each here; their sessions end (they carry none).

Revision ID: 0029
Revises: 0028
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN (a batch recreate would cascade-delete the tokens)
    op.add_column(
        "users",
        sa.Column("session_nonce", sa.String(length=32), nullable=False, server_default="unset"),
    )
    users = sa.table("users", sa.column("id", sa.Integer()), sa.column("session_nonce"))
    conn = op.get_bind()
    for (user_id,) in conn.execute(sa.select(users.c.id)).all():
        conn.execute(
            users.update().where(users.c.id == user_id).values(session_nonce=secrets.token_hex(16))
        )


def downgrade() -> None:
    op.drop_column("users", "session_nonce")
