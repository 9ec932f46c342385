"""assets and asset events (issue 15)

``assets`` (a URI, name and group), ``asset_refs`` (which DAG produces or consumes
which asset), ``asset_events`` (one per successful try with the asset in its outlets,
or per external emit), ``asset_queue`` (each consuming DAG's events not yet consumed)
and ``asset_run_events`` (the events an asset-triggered run consumed).

Revision ID: 0014
Revises: 0013
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "assets",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("uri", sa.String(length=1000), nullable=False),
        sa.Column("name", sa.String(length=250), nullable=False),
        sa.Column("group_name", sa.String(length=250), nullable=True),
        sa.Column("created_at", When, nullable=False),
        sa.Column("updated_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_assets")),
        sa.UniqueConstraint("uri", name=op.f("uq_assets_uri")),
    )
    op.create_table(
        "asset_refs",
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("asset_id", Id, nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("task_id", sa.String(length=250), nullable=False),
        sa.ForeignKeyConstraint(
            ["asset_id"], ["assets.id"], name=op.f("fk_asset_refs_asset_id_assets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("dag_id", "asset_id", "kind", "task_id", name=op.f("pk_asset_refs")),
    )  # fmt: skip
    op.create_index(op.f("ix_asset_refs_asset_id"), "asset_refs", ["asset_id"])
    op.create_table(
        "asset_events",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("asset_id", Id, nullable=False),
        sa.Column("at", When, nullable=False),
        sa.Column("extra", sa.Text(), nullable=False),
        sa.Column("source_dag_id", sa.String(length=250), nullable=True),
        sa.Column("source_run_id", sa.String(length=400), nullable=True),
        sa.Column("source_task_id", sa.String(length=250), nullable=True),
        sa.Column("source_try_number", sa.Integer(), nullable=True),
        sa.Column("source_ti_id", Id, nullable=True),
        sa.Column("emitter", sa.String(length=250), nullable=True),
        sa.ForeignKeyConstraint(
            ["asset_id"], ["assets.id"], name=op.f("fk_asset_events_asset_id_assets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_asset_events")),
        sa.UniqueConstraint(
            "asset_id", "source_ti_id", "source_try_number",
            name=op.f("uq_asset_events_asset_id_source_ti_id_source_try_number"),
        ),
    )  # fmt: skip
    op.create_index(op.f("ix_asset_events_asset_id_id"), "asset_events", ["asset_id", "id"])
    op.create_table(
        "asset_queue",
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("event_id", Id, nullable=False),
        sa.Column("asset_id", Id, nullable=False),
        sa.Column("queued_at", When, nullable=False),
        sa.ForeignKeyConstraint(
            ["event_id"], ["asset_events.id"], name=op.f("fk_asset_queue_event_id_asset_events"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("dag_id", "event_id", name=op.f("pk_asset_queue")),
    )  # fmt: skip
    op.create_table(
        "asset_run_events",
        sa.Column("run_pk", Id, nullable=False),
        sa.Column("event_id", Id, nullable=False),
        sa.ForeignKeyConstraint(
            ["run_pk"], ["dag_runs.id"], name=op.f("fk_asset_run_events_run_pk_dag_runs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["event_id"], ["asset_events.id"],
            name=op.f("fk_asset_run_events_event_id_asset_events"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_pk", "event_id", name=op.f("pk_asset_run_events")),
    )  # fmt: skip
    op.create_index(op.f("ix_asset_run_events_event_id"), "asset_run_events", ["event_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_asset_run_events_event_id"), table_name="asset_run_events")
    op.drop_table("asset_run_events")
    op.drop_table("asset_queue")
    op.drop_index(op.f("ix_asset_events_asset_id_id"), table_name="asset_events")
    op.drop_table("asset_events")
    op.drop_index(op.f("ix_asset_refs_asset_id"), table_name="asset_refs")
    op.drop_table("asset_refs")
    op.drop_table("assets")
