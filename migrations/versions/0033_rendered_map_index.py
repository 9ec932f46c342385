"""Mapped task instances get a name (issue 25 item 7)

``task_instances.rendered_map_index``: the instance's name rendered from its task's
``map_index_template`` when the instance is created (Airflow's column); NULL when the
task has no template, or for instances created before this revision.

Revision ID: 0033
Revises: 0032
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("task_instances", sa.Column("rendered_map_index", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_instances") as batch:
        batch.drop_column("rendered_map_index")
