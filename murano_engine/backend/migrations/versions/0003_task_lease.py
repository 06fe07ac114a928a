"""The lease of a task the API runs in its own process: until when its holder keeps it.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.add_column("task", sa.Column("lease_until", sa.DateTime(), nullable=True))


def downgrade() -> None:
    op.drop_column("task", "lease_until")
