"""tries lost to infrastructure (issue 12, item 6)

Revision ID: 0008
Revises: 0007
"""

from collections.abc import Sequence

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # placeholder: filled in by the change it is named after


def downgrade() -> None:
    pass
