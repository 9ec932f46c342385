"""revocable sessions and login throttling (issue 12, items 10-11)

``users.session_version`` is copied into each signed-in session and compared on every
request; logout, a password change and deleting the user move it on, so every cookie
issued before stops working. ``login_failures`` counts wrong logins per user name and
per client address across every web process sharing the database.

Revision ID: 0009
Revises: 0008
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column("session_version", sa.Integer(), nullable=False, server_default="0")
        )
    op.create_table(
        "login_failures",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("username", sa.String(length=100), nullable=False),
        sa.Column("address", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
    )
    op.create_index(op.f("ix_login_failures_username_at"), "login_failures", ["username", "at"])
    op.create_index(op.f("ix_login_failures_address_at"), "login_failures", ["address", "at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_login_failures_address_at"), table_name="login_failures")
    op.drop_index(op.f("ix_login_failures_username_at"), table_name="login_failures")
    op.drop_table("login_failures")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("session_version")
