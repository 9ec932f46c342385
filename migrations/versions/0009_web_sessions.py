"""revocable sessions and login throttling (issue 12, items 10-11)

Revision ID: 0009
Revises: 0008
"""

from collections.abc import Sequence

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # placeholder: filled in by the change it is named after


def downgrade() -> None:
    pass
