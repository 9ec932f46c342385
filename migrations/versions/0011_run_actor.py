"""who triggered each run (issue 13, item 7)

Revision ID: 0011
Revises: 0010
"""

from collections.abc import Sequence

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # placeholder: filled in by the change it is named after


def downgrade() -> None:
    pass
