"""runtime task mapping (issue 14)

A mapped task has one task instance per map item, ``map_index`` 0..n-1; every other
task instance keeps ``map_index`` -1 (Airflow's value for "not mapped"), so a run has at
most one instance per (run, task, map_index). ``map_kwargs`` holds the JSON of an
instance's mapped arguments, written once when the task is expanded. Tries carry the
map index of their instance so a try's log and the CLI can name it.

Revision ID: 0012
Revises: 0011
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _keep_tries() -> bool:
    """On SQLite the unique key can only change by recreating ``task_instances``; with
    foreign keys on, dropping the old table would cascade-delete every try, so the tries
    are copied aside first and put back afterwards (as 0002 does for ``dag_runs``)."""
    if op.get_bind().dialect.name != "sqlite":
        return False
    op.execute("CREATE TEMP TABLE _keep_task_tries AS SELECT * FROM task_tries")
    return True


def _restore_tries() -> None:
    op.execute("DELETE FROM task_tries")
    op.execute("INSERT INTO task_tries SELECT * FROM _keep_task_tries")
    op.execute("DROP TABLE _keep_task_tries")


def upgrade() -> None:
    kept = _keep_tries()
    with op.batch_alter_table("task_instances", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("map_index", sa.Integer(), nullable=False, server_default="-1")
        )
        batch_op.add_column(sa.Column("map_kwargs", sa.Text(), nullable=True))
        batch_op.drop_constraint("uq_task_instances_run_pk_task_id", type_="unique")
        batch_op.create_unique_constraint(
            "uq_task_instances_run_pk_task_id_map_index", ["run_pk", "task_id", "map_index"]
        )
    if kept:
        _restore_tries()
    with op.batch_alter_table("task_tries", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("map_index", sa.Integer(), nullable=False, server_default="-1")
        )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("map_index", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_column("map_index")
    with op.batch_alter_table("task_tries", schema=None) as batch_op:
        batch_op.drop_column("map_index")
    # a run's mapped instances other than the first cannot survive the old unique key
    op.execute("DELETE FROM task_tries WHERE ti_id IN "
               "(SELECT id FROM task_instances WHERE map_index > 0)")  # fmt: skip
    op.execute("DELETE FROM task_instances WHERE map_index > 0")
    kept = _keep_tries()
    with op.batch_alter_table("task_instances", schema=None) as batch_op:
        batch_op.drop_constraint("uq_task_instances_run_pk_task_id_map_index", type_="unique")
        batch_op.create_unique_constraint("uq_task_instances_run_pk_task_id", ["run_pk", "task_id"])
        batch_op.drop_column("map_kwargs")
        batch_op.drop_column("map_index")
    if kept:
        _restore_tries()
