"""assets and asset events (issue 15)

Revision ID: 0014
Revises: 0013
"""

from collections.abc import Sequence

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # nothing changes in this revision


def downgrade() -> None:
    pass
