"""Initial schema: environments, sessions, tasks, statuses, templates and the catalog.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "category",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "environment",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("description", sa.JSON(), nullable=False),
        sa.Column("description_text", sa.Text(), nullable=False),
        sa.Column("acquired_by", sa.String(length=36), nullable=True),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "name"),
    )
    op.create_index(op.f("ix_environment_tenant_id"), "environment", ["tenant_id"], unique=False)
    op.create_table(
        "environment-template",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("description", sa.JSON(), nullable=False),
        sa.Column("description_text", sa.Text(), nullable=False),
        sa.Column("is_public", sa.Boolean(), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "name"),
    )
    op.create_index(
        op.f("ix_environment-template_tenant_id"),
        "environment-template",
        ["tenant_id"],
        unique=False,
    )
    op.create_table(
        "package",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("fully_qualified_name", sa.String(length=128), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=20), nullable=False),
        sa.Column("author", sa.String(length=80), nullable=True),
        sa.Column("supplier", sa.JSON(), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("is_public", sa.Boolean(), nullable=False),
        sa.Column("owner_id", sa.String(length=64), nullable=False),
        sa.Column("archive_hash", sa.String(length=64), nullable=False),
        sa.Column("archive", sa.LargeBinary(), nullable=False),
        sa.Column("logo", sa.LargeBinary(), nullable=True),
        sa.Column("supplier_logo", sa.LargeBinary(), nullable=True),
        sa.Column("ui_definition", sa.Text(), nullable=True),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("fully_qualified_name", "version", "owner_id"),
    )
    op.create_index(
        op.f("ix_package_fully_qualified_name"), "package", ["fully_qualified_name"], unique=False
    )
    op.create_index(op.f("ix_package_owner_id"), "package", ["owner_id"], unique=False)
    op.create_table(
        "tag",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "class_definition",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("package_id", sa.String(length=36), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["package_id"], ["package.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_class_definition_name"), "class_definition", ["name"], unique=False)
    op.create_index(
        op.f("ix_class_definition_package_id"), "class_definition", ["package_id"], unique=False
    )
    op.create_table(
        "package_to_category",
        sa.Column("package_id", sa.String(length=36), nullable=False),
        sa.Column("category_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["category_id"], ["category.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["package_id"], ["package.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("package_id", "category_id"),
    )
    op.create_index(
        op.f("ix_package_to_category_category_id"),
        "package_to_category",
        ["category_id"],
        unique=False,
    )
    op.create_table(
        "package_to_tag",
        sa.Column("package_id", sa.String(length=36), nullable=False),
        sa.Column("tag_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["package_id"], ["package.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tag_id"], ["tag.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("package_id", "tag_id"),
    )
    op.create_index(op.f("ix_package_to_tag_tag_id"), "package_to_tag", ["tag_id"], unique=False)
    op.create_table(
        "session",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("environment_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("description", sa.JSON(), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["environment_id"], ["environment.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_session_environment_id"), "session", ["environment_id"], unique=False)
    op.create_table(
        "task",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("environment_id", sa.String(length=36), nullable=False),
        sa.Column("session_id", sa.String(length=36), nullable=True),
        sa.Column("started", sa.DateTime(), nullable=False),
        sa.Column("finished", sa.DateTime(), nullable=True),
        sa.Column("description", sa.JSON(), nullable=True),
        sa.Column("action", sa.JSON(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["environment_id"], ["environment.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_task_environment_id"), "task", ["environment_id"], unique=False)
    op.create_table(
        "status",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("entity_id", sa.String(length=255), nullable=True),
        sa.Column("entity", sa.String(length=32), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("level", sa.String(length=32), nullable=False),
        sa.Column("details", sa.Text(), nullable=True),
        sa.Column("timestamp", sa.String(length=64), nullable=True),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["task.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_status_task_id"), "status", ["task_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_status_task_id"), table_name="status")
    op.drop_table("status")
    op.drop_index(op.f("ix_task_environment_id"), table_name="task")
    op.drop_table("task")
    op.drop_index(op.f("ix_session_environment_id"), table_name="session")
    op.drop_table("session")
    op.drop_index(op.f("ix_package_to_tag_tag_id"), table_name="package_to_tag")
    op.drop_table("package_to_tag")
    op.drop_index(op.f("ix_package_to_category_category_id"), table_name="package_to_category")
    op.drop_table("package_to_category")
    op.drop_index(op.f("ix_class_definition_package_id"), table_name="class_definition")
    op.drop_index(op.f("ix_class_definition_name"), table_name="class_definition")
    op.drop_table("class_definition")
    op.drop_table("tag")
    op.drop_index(op.f("ix_package_owner_id"), table_name="package")
    op.drop_index(op.f("ix_package_fully_qualified_name"), table_name="package")
    op.drop_table("package")
    op.drop_index(op.f("ix_environment-template_tenant_id"), table_name="environment-template")
    op.drop_table("environment-template")
    op.drop_index(op.f("ix_environment_tenant_id"), table_name="environment")
    op.drop_table("environment")
    op.drop_table("category")
