"""task environments and notifiers (issue 16)

Revision ID: 0017
Revises: 0016
"""

from collections.abc import Sequence

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # nothing changes in this revision


def downgrade() -> None:
    pass
