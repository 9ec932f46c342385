"""scheduling semantics: run dedupe by run type, backfill records

One run per fire time now holds for scheduled and backfill runs only (a partial
unique index), so a manual run for the same instant never blocks the scheduled one.
Backfills are stored, and runs point at the backfill that created them.

On SQLite the unique constraint can only go by recreating ``dag_runs``. With
foreign keys on, dropping the old table would cascade-delete every task instance
and try, so those rows are copied aside first and put back afterwards.

Revision ID: 0002
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHERE = "run_type IN ('scheduled', 'backfill')"
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
CHILDREN = ("task_instances", "task_tries")  # parent first


def _save_children() -> None:
    for name in CHILDREN:
        op.execute(f"CREATE TEMP TABLE _keep_{name} AS SELECT * FROM {name}")


def _restore_children() -> None:
    for name in CHILDREN:
        op.execute(f"DELETE FROM {name}")
        op.execute(f"INSERT INTO {name} SELECT * FROM _keep_{name}")
        op.execute(f"DROP TABLE _keep_{name}")


def upgrade() -> None:
    op.create_table(
        "backfills",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("range_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("range_end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("max_active_runs", sa.Integer(), nullable=False),
        sa.Column("reverse", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("end_date", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backfills")),
    )
    op.create_index(op.f("ix_backfills_dag_id"), "backfills", ["dag_id"], unique=False)
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        _save_children()
    with op.batch_alter_table("dag_runs", recreate="always" if sqlite else "auto") as batch:
        batch.drop_constraint("uq_dag_runs_dag_id_logical_date", type_="unique")
        batch.add_column(sa.Column("backfill_id", Id, nullable=True))
    if sqlite:
        _restore_children()
    op.create_index(op.f("ix_dag_runs_backfill_id"), "dag_runs", ["backfill_id"], unique=False)
    op.create_index(op.f("ix_dag_runs_dag_id_logical_date"), "dag_runs", ["dag_id", "logical_date"])
    op.create_index(
        "ux_dag_runs_one_per_fire_time",
        "dag_runs",
        ["dag_id", "logical_date"],
        unique=True,
        sqlite_where=sa.text(WHERE),
        postgresql_where=sa.text(WHERE),
    )


def downgrade() -> None:
    # manual runs that share a fire time with a scheduled run cannot survive the old
    # constraint; they are removed (with their task instances) before it comes back
    op.execute(
        "DELETE FROM dag_runs WHERE run_type NOT IN ('scheduled', 'backfill') AND EXISTS "
        "(SELECT 1 FROM dag_runs o WHERE o.dag_id = dag_runs.dag_id "
        "AND o.logical_date = dag_runs.logical_date AND o.id <> dag_runs.id)"
    )
    op.drop_index("ux_dag_runs_one_per_fire_time", table_name="dag_runs")
    op.drop_index(op.f("ix_dag_runs_dag_id_logical_date"), table_name="dag_runs")
    op.drop_index(op.f("ix_dag_runs_backfill_id"), table_name="dag_runs")
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        _save_children()
    with op.batch_alter_table("dag_runs", recreate="always" if sqlite else "auto") as batch:
        batch.drop_column("backfill_id")
        batch.create_unique_constraint(
            "uq_dag_runs_dag_id_logical_date", ["dag_id", "logical_date"]
        )
    if sqlite:
        _restore_children()
    op.drop_index(op.f("ix_backfills_dag_id"), table_name="backfills")
    op.drop_table("backfills")
