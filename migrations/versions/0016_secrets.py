"""variables, connections and secrets (issue 16)

Revision ID: 0016
Revises: 0015
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a variable's value is plain text, or a Fernet token when is_encrypted (secret or
    # named like *password*, *secret*, *token*, *key*)
    op.create_table(
        "variables",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("key", sa.String(250), nullable=False),
        sa.Column("val", sa.Text(), nullable=False),
        sa.Column("is_json", sa.Boolean(), nullable=False),
        sa.Column("is_secret", sa.Boolean(), nullable=False),
        sa.Column("is_encrypted", sa.Boolean(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_variables")),
        sa.UniqueConstraint("key", name=op.f("uq_variables_key")),
    )
    # password and extra are Fernet tokens
    op.create_table(
        "connections",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("conn_id", sa.String(250), nullable=False),
        sa.Column("conn_type", sa.String(500), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("host", sa.String(500), nullable=True),
        sa.Column("schema", sa.String(500), nullable=True),
        sa.Column("login", sa.Text(), nullable=True),
        sa.Column("password", sa.Text(), nullable=True),
        sa.Column("port", sa.Integer(), nullable=True),
        sa.Column("extra", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_connections")),
        sa.UniqueConstraint("conn_id", name=op.f("uq_connections_conn_id")),
    )


def downgrade() -> None:
    op.drop_table("connections")
    op.drop_table("variables")
