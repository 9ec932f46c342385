"""DAG source stored with each version (issue 12, item 12)

Revision ID: 0010
Revises: 0009
"""

from collections.abc import Sequence

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # placeholder: filled in by the change it is named after


def downgrade() -> None:
    pass
