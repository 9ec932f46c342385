"""deferrable tasks, triggerers and asset watchers (issue 30)

A task instance that defers (``ctx.defer``) waits in state ``deferred`` (a plain
string) with its trigger (``trigger_id``), the trigger's deadline and what its next
try process calls when the trigger fires (``next_method``, ``next_kwargs``). Triggers
are rows a triggerer takes under a lease; ``triggerers`` registers the triggerer
processes (their loop lag). ``watchers`` holds each asset watcher's lease, state and
counts, and ``watcher_messages`` the message ids already turned into asset events (a
redelivered message is acked without a second event).

Revision ID: 0028
Revises: 0020
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
When = sa.DateTime(timezone=True)


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN (a batch recreate would cascade-delete the tries)
    op.add_column("task_instances", sa.Column("trigger_id", Id))
    op.add_column("task_instances", sa.Column("trigger_timeout", When))
    op.add_column("task_instances", sa.Column("next_method", sa.String(250)))
    op.add_column("task_instances", sa.Column("next_kwargs", sa.Text()))
    op.create_index("ix_task_instances_trigger_id", "task_instances", ["trigger_id"])
    op.create_index(
        "ix_task_instances_state_trigger_timeout", "task_instances", ["state", "trigger_timeout"]
    )
    op.create_table(
        "triggers",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("classpath", sa.String(500), nullable=False),
        sa.Column("kwargs", sa.Text(), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.Column("fileloc", sa.Text()),
        sa.Column("triggerer_id", sa.String(250)),
        sa.Column("lease_expires_at", When),
        sa.PrimaryKeyConstraint("id", name="pk_triggers"),
    )
    op.create_index("ix_triggers_triggerer_id", "triggers", ["triggerer_id"])
    op.create_index("ix_triggers_lease_expires_at", "triggers", ["lease_expires_at"])
    op.create_table(
        "triggerers",
        sa.Column("triggerer_id", sa.String(250), nullable=False),
        sa.Column("hostname", sa.String(250), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("capacity", sa.Integer(), nullable=False),
        sa.Column("started_at", When, nullable=False),
        sa.Column("heartbeat_at", When, nullable=False),
        sa.Column("stopped_at", When),
        sa.Column("triggers", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("watchers", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("loop_lag", sa.Float(), nullable=False, server_default="0"),
        sa.Column("blocked_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("blocked_by", sa.Text()),
        sa.Column("blocked_at", When),
        sa.PrimaryKeyConstraint("triggerer_id", name="pk_triggerers"),
    )
    op.create_table(
        "watchers",
        sa.Column("key", sa.String(700), nullable=False),
        sa.Column("asset_uri", sa.String(500), nullable=False),
        sa.Column("kind", sa.String(50), nullable=False),
        sa.Column("conn_id", sa.String(250), nullable=False),
        sa.Column("source", sa.String(500), nullable=False),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("triggerer_id", sa.String(250)),
        sa.Column("lease_expires_at", When),
        sa.Column("state", sa.String(20), nullable=False, server_default="idle"),
        sa.Column("last_error", sa.Text()),
        sa.Column("last_error_at", When),
        sa.Column("failures", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("cursor", sa.Text()),
        sa.Column("messages", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("rejected", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("last_message_at", When),
        sa.Column("updated_at", When, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_watchers"),
    )
    op.create_table(
        "watcher_messages",
        sa.Column("watcher_key", sa.String(700), nullable=False),
        sa.Column("message_id", sa.String(500), nullable=False),
        sa.Column("event_id", Id),
        sa.Column("at", When, nullable=False),
        sa.PrimaryKeyConstraint("watcher_key", "message_id", name="pk_watcher_messages"),
    )
    op.create_index("ix_watcher_messages_at", "watcher_messages", ["at"])


def downgrade() -> None:
    op.drop_index("ix_watcher_messages_at", table_name="watcher_messages")
    op.drop_table("watcher_messages")
    op.drop_table("watchers")
    op.drop_table("triggerers")
    op.drop_index("ix_triggers_lease_expires_at", table_name="triggers")
    op.drop_index("ix_triggers_triggerer_id", table_name="triggers")
    op.drop_table("triggers")
    op.drop_index("ix_task_instances_state_trigger_timeout", table_name="task_instances")
    op.drop_index("ix_task_instances_trigger_id", table_name="task_instances")
    with op.batch_alter_table("task_instances", schema=None) as batch_op:
        batch_op.drop_column("next_kwargs")
        batch_op.drop_column("next_method")
        batch_op.drop_column("trigger_timeout")
        batch_op.drop_column("trigger_id")
