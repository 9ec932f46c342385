"""tries lost to infrastructure (issue 12, item 6)

A try lost to infrastructure (lease expired, handed back on shutdown) is retried
without spending the task's retries, up to ``max_lost_tries``: the task instance counts
its lost tries, and a lost try records why it was lost.

Revision ID: 0008
Revises: 0007
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("task_instances", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("lost_tries", sa.Integer(), nullable=False, server_default="0")
        )
    with op.batch_alter_table("task_tries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lost_reason", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_tries", schema=None) as batch_op:
        batch_op.drop_column("lost_reason")
    with op.batch_alter_table("task_instances", schema=None) as batch_op:
        batch_op.drop_column("lost_tries")
