"""API tokens, roles and actors (issue 17)

Revision ID: 0019
Revises: 0018
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # every login made before roles existed could do everything: it stays an admin
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("role", sa.String(20), nullable=False, server_default="admin"))
    op.create_table(
        "api_tokens",
        # the public id, the middle part of "orc_<id>_<secret>": looked up, never secret
        sa.Column("token_id", sa.String(16), nullable=False),
        sa.Column(
            "user_id",
            Id,
            sa.ForeignKey("users.id", name=op.f("fk_api_tokens_user_id_users"), ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),  # sha256 hex of the secret
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("token_id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("user_id", "name", name=op.f("uq_api_tokens_user_id_name")),
    )
    # who did it: "web:ada", "api:ada", "api:ada/token:ci", "cli:root@host"; NULL for
    # the scheduler's and workers' own decisions (and every event before this revision)
    with op.batch_alter_table("events") as batch:
        batch.add_column(sa.Column("actor", sa.String(250), nullable=True))
        batch.create_index(op.f("ix_events_actor_id"), ["actor", "id"])


def downgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.drop_index(op.f("ix_events_actor_id"))
        batch.drop_column("actor")
    op.drop_table("api_tokens")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("role")
