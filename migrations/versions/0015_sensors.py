"""sensors and reschedules (issue 15)

A sensor in reschedule mode waits between pokes in state ``up_for_reschedule`` (a
plain string: no schema change for the state). Its task instance keeps, for the
current try, when the first poke started (the sensor's timeout counts from it) and
how many pokes found the condition unmet (the exponential backoff counts them, and a
claim of a rescheduled instance reopens its try instead of starting a new one), and
whether its check is a built-in one the worker evaluates itself (such pokes are claimed
beyond the worker's free task slots: they use none).

Revision ID: 0015
Revises: 0014
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on both backends, never a batch "recreate":
    # recreating task_instances on SQLite would cascade-delete its tries
    op.add_column("task_instances", sa.Column("first_poke_at", sa.DateTime(timezone=True)))
    op.add_column(
        "task_instances",
        sa.Column("poke_count", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column(
        "task_instances",
        sa.Column("worker_check", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_index(
        "ix_task_instances_worker_check_state_ready_at",
        "task_instances",
        ["worker_check", "state", "ready_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_task_instances_worker_check_state_ready_at", table_name="task_instances")
    with op.batch_alter_table("task_instances", schema=None) as batch_op:
        batch_op.drop_column("worker_check")
        batch_op.drop_column("poke_count")
        batch_op.drop_column("first_poke_at")
