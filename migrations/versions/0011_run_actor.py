"""who triggered each run (issue 13, item 7)

Revision ID: 0011
Revises: 0010
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # "cli:USER@HOST", "web:USER", "api:USER" for manual and backfill runs; NULL for
    # the scheduler's own runs (and for every run created before this revision)
    with op.batch_alter_table("dag_runs") as batch:
        batch.add_column(sa.Column("triggered_by", sa.String(250), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("dag_runs") as batch:
        batch.drop_column("triggered_by")
