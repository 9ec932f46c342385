"""cluster: pools, scheduler registry

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pools",
        sa.Column("name", sa.String(length=250), nullable=False),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_pools")),
    )
    with op.batch_alter_table("task_instances", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pool", sa.String(length=250), nullable=True))
        batch_op.add_column(
            sa.Column("pool_slots", sa.Integer(), nullable=False, server_default="1")
        )
    op.create_table(
        "schedulers",
        sa.Column("scheduler_id", sa.String(length=250), nullable=False),
        sa.Column("hostname", sa.String(length=250), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("scheduler_id", name=op.f("pk_schedulers")),
    )


def downgrade() -> None:
    op.drop_table("schedulers")
    with op.batch_alter_table("task_instances", schema=None) as batch_op:
        batch_op.drop_column("pool_slots")
        batch_op.drop_column("pool")
    op.drop_table("pools")
