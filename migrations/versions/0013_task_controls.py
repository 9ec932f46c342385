"""task groups and task controls (issue 14)

Revision ID: 0013
Revises: 0012
"""

from collections.abc import Sequence

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # nothing changes in this revision


def downgrade() -> None:
    pass
