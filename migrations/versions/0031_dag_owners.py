"""The DAG list shows, filters and sorts by owner (issue 27 item 7)

``dags.owners``: the owners of the DAG's tasks (``owner=`` or default_args' ``owner``),
a sorted JSON list as ``tags`` is; ``[]`` until the DAG processor next saves the DAG.

Revision ID: 0031
Revises: 0030
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("dags", sa.Column("owners", sa.Text(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("dags") as batch:
        batch.drop_column("owners")
