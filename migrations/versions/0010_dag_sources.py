"""DAG source stored with each version (issue 12, item 12); a graph layout per version (item 18)

Revision ID: 0010
Revises: 0009
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dag_sources",
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("hash", name=op.f("pk_dag_sources")),
    )
    # nullable columns: SQLite adds them without rebuilding the table
    op.add_column("dag_versions", sa.Column("source_hash", sa.String(64), nullable=True))
    op.add_column("dag_versions", sa.Column("layout", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("dag_versions") as batch:
        batch.drop_column("layout")
        batch.drop_column("source_hash")
    op.drop_table("dag_sources")
