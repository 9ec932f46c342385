"""runtime task mapping (issue 14)

Revision ID: 0012
Revises: 0011
"""

from collections.abc import Sequence

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # nothing changes in this revision


def downgrade() -> None:
    pass
