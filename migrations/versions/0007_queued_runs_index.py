"""queued runs index

Revision ID: 0007
Revises: 0006
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a DAG's oldest queued runs, read whenever runs start (store/runs/run_progress.py), in
    # O(max_active_runs) however long the DAG's history is
    op.create_index(
        "ix_dag_runs_dag_id_state_logical_date",
        "dag_runs",
        ["dag_id", "state", "logical_date"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_dag_runs_dag_id_state_logical_date", table_name="dag_runs")
