"""Deployment journals of running tasks, and the worker that took each task.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    op.create_table(
        "journal_entry",
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("entry", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["task.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("task_id", "seq"),
    )
    op.add_column("task", sa.Column("worker", sa.String(length=255), nullable=True))


def downgrade() -> None:
    op.drop_column("task", "worker")
    op.drop_table("journal_entry")
