"""values pushed by tries: ``ti.xcom_push(key, value)`` (issue 25 item 3)

``task_xcoms`` holds one JSON value per (task instance, key), with the try that pushed
it: a pull reads only the rows of the instance's current try. The rows go with their
task instance (cascade), when it is cleared, and with its run by retention.

Revision ID: 0032
Revises: 0031
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "task_xcoms",
        sa.Column("ti_id", Id, nullable=False),
        sa.Column("key", sa.String(250), nullable=False),
        sa.Column("try_number", sa.Integer(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["ti_id"],
            ["task_instances.id"],
            name=op.f("fk_task_xcoms_ti_id_task_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("ti_id", "key", name=op.f("pk_task_xcoms")),
    )


def downgrade() -> None:
    op.drop_table("task_xcoms")
