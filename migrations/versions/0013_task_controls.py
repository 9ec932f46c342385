"""task groups and task controls (issue 14)

Claims take higher ``priority_weight`` first (then the oldest ready): the column and an
index in the claim's order. Instances of a task with ``depends_on_past`` or
``max_active_tis_per_dag``, or of a DAG with ``max_active_tasks``, are ``gated``: the
plain claim skips them and store/tasks/concurrency.py claims them after its checks, which
count running instances per DAG and task (the second index), reading its candidates
from a partial index of the gated instances (the third). Task groups need no
column: a task's group path is in its DAG version's spec.

Revision ID: 0013
Revises: 0012
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on both backends (SQLite takes a NOT NULL column
    # with a default): a batch that recreated task_instances on SQLite would cascade the
    # drop to task_tries
    op.add_column(
        "task_instances",
        sa.Column("priority_weight", sa.Integer(), nullable=False, server_default="1"),
    )
    op.add_column(
        "task_instances",
        sa.Column("gated", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_index(
        "ix_task_instances_state_priority_weight_ready_at",
        "task_instances",
        ["state", "priority_weight", "ready_at"],
    )
    op.create_index(
        "ix_task_instances_dag_id_state_task_id", "task_instances", ["dag_id", "state", "task_id"]
    )
    op.create_index(
        "ix_task_instances_gated_ready",
        "task_instances",
        ["state", "ready_at"],
        sqlite_where=sa.text("gated = 1"),
        postgresql_where=sa.text("gated"),
    )


def downgrade() -> None:
    op.drop_index("ix_task_instances_gated_ready", table_name="task_instances")
    op.drop_index("ix_task_instances_dag_id_state_task_id", table_name="task_instances")
    op.drop_index("ix_task_instances_state_priority_weight_ready_at", table_name="task_instances")
    with op.batch_alter_table("task_instances", schema=None) as batch_op:
        batch_op.drop_column("gated")
        batch_op.drop_column("priority_weight")
