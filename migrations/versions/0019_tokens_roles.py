"""API tokens, roles and actors (issue 17)

Revision ID: 0019
Revises: 0018
"""

from collections.abc import Sequence

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass  # nothing changes in this revision


def downgrade() -> None:
    pass
