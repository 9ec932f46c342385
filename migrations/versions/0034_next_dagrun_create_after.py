"""When the scheduler next creates a run of a DAG, indexed (issue 29)

``dags.next_dagrun_create_after`` (Airflow's column): the time from which the scheduler
has a run to create or a schedule cursor to move for this DAG; NULL when it has none (a
manual-only DAG, an exhausted schedule). The scheduler reads the DAGs due in this
column's order, a bounded batch at a time, instead of every DAG on every tick.

Existing rows take their cursor (or, with none yet, their creation time, so the next
tick looks at them once); a manual-only DAG is set to NULL the first time it is read.

Revision ID: 0034
Revises: 0033
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0034"
down_revision: str | None = "0033"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "dags", sa.Column("next_dagrun_create_after", sa.DateTime(timezone=True), nullable=True)
    )
    op.execute(
        "UPDATE dags SET next_dagrun_create_after = COALESCE(next_logical_date, created_at) "
        "WHERE schedule_exhausted = false"
    )
    op.create_index("ix_dags_next_dagrun_create_after", "dags", ["next_dagrun_create_after"])


def downgrade() -> None:
    op.drop_index("ix_dags_next_dagrun_create_after", table_name="dags")
    with op.batch_alter_table("dags") as batch:
        batch.drop_column("next_dagrun_create_after")
