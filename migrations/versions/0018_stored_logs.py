"""try logs and DAG versions in the store (issue 17)

Try logs: the worker that runs a try ships its log file's bytes to ``log_chunks``, so
any machine reads any try's log, also after that worker is gone. DAG versions need no
schema change (``dag_versions`` and ``dag_sources`` hold them since 0010).

Revision ID: 0018
Revises: 0017
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "log_chunks",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("ti_id", Id, nullable=False),
        sa.Column("try_number", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("start_byte", sa.BigInteger(), nullable=False),
        sa.Column("end_byte", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_log_chunks")),
        sa.UniqueConstraint(
            "ti_id", "try_number", "seq", name=op.f("uq_log_chunks_ti_id_try_number_seq")
        ),
    )


def downgrade() -> None:
    op.drop_table("log_chunks")
