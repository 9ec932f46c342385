"""hot path indexes

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # per-run state counts when a finished task releases a large fan-in (store/tasks/release.py)
    op.create_index(
        "ix_task_instances_run_pk_state", "task_instances", ["run_pk", "state"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_task_instances_run_pk_state", table_name="task_instances")
