"""observability: alerts, their deliveries, and the alert watchdog's event cursor

Revision ID: 0004
Revises: 0003
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "alerts",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=600), nullable=False),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("dag_id", sa.String(length=250), nullable=True),
        sa.Column("run_id", sa.String(length=400), nullable=True),
        sa.Column("task_id", sa.String(length=250), nullable=True),
        sa.Column("try_number", sa.Integer(), nullable=True),
        sa.Column("logical_date", When, nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alerts")),
        sa.UniqueConstraint("key", name=op.f("uq_alerts_key")),
    )
    op.create_index(op.f("ix_alerts_created_at"), "alerts", ["created_at"])
    op.create_index(op.f("ix_alerts_dag_id_id"), "alerts", ["dag_id", "id"])
    op.create_table(
        "alert_deliveries",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("alert_id", Id, nullable=False),
        sa.Column("notifier", sa.String(length=20), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", When, nullable=False),
        sa.Column("lease_until", When, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", When, nullable=True),
        sa.ForeignKeyConstraint(
            ["alert_id"],
            ["alerts.id"],
            name=op.f("fk_alert_deliveries_alert_id_alerts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_deliveries")),
    )
    op.create_index(
        op.f("ix_alert_deliveries_state_next_attempt_at"),
        "alert_deliveries",
        ["state", "next_attempt_at"],
    )
    op.create_index(op.f("ix_alert_deliveries_alert_id"), "alert_deliveries", ["alert_id"])
    op.create_table(
        "alert_cursors",
        sa.Column("name", sa.String(length=50), nullable=False),
        sa.Column("last_event_id", Id, nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_alert_cursors")),
    )


def downgrade() -> None:
    op.drop_table("alert_cursors")
    op.drop_index(op.f("ix_alert_deliveries_alert_id"), table_name="alert_deliveries")
    op.drop_index(op.f("ix_alert_deliveries_state_next_attempt_at"), table_name="alert_deliveries")
    op.drop_table("alert_deliveries")
    op.drop_index(op.f("ix_alerts_dag_id_id"), table_name="alerts")
    op.drop_index(op.f("ix_alerts_created_at"), table_name="alerts")
    op.drop_table("alerts")
