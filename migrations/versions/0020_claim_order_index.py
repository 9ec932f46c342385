"""the claim order as an index (issue 14)

Claims take the highest ``priority_weight`` first, then the oldest ready. 0013's index
``(state, priority_weight, ready_at)`` ran in one direction, so the claim's mixed order
(``priority_weight DESC, ready_at``) sorted every claimable row on each claim: with
10,000 mapped instances queued, most of a worker round. The index now runs in the
claim's order, and the claim reads it state by state (store/tasks/claims.py), stopping at the
first ``limit`` rows. Pooled instances get a partial index of their own, so the claim's
look for pools with waiting tasks reads only pooled rows.

Revision ID: 0020
Revises: 0019
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_task_instances_state_priority_weight_ready_at", table_name="task_instances")
    op.create_index(
        "ix_task_instances_claim_order",
        "task_instances",
        ["state", sa.literal_column("priority_weight").desc(), "ready_at"],
    )
    op.create_index(
        "ix_task_instances_pooled_ready",
        "task_instances",
        ["pool", "state", "ready_at"],
        sqlite_where=sa.text("pool IS NOT NULL"),
        postgresql_where=sa.text("pool IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_task_instances_pooled_ready", table_name="task_instances")
    op.drop_index("ix_task_instances_claim_order", table_name="task_instances")
    op.create_index(
        "ix_task_instances_state_priority_weight_ready_at",
        "task_instances",
        ["state", "priority_weight", "ready_at"],
    )
