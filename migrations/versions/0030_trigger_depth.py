"""trigger_dag chains carry their depth (issue 24 item 6)

``dag_runs.trigger_depth``: 0 for a run no trigger_dag task made, else the depth of the
run whose task made it plus one. A trigger_dag task whose new run would pass the
``max_trigger_depth`` setting fails instead, naming the chain.

Revision ID: 0030
Revises: 0029
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN with a server default: existing runs are depth 0 (a batch
    # recreate of dag_runs would cascade-delete its task instances on SQLite)
    op.add_column(
        "dag_runs",
        sa.Column("trigger_depth", sa.Integer(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    with op.batch_alter_table("dag_runs") as batch:
        batch.drop_column("trigger_depth")
