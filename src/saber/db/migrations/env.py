"""Alembic environment: migrations run on the connection (and in the transaction) ``saber.db.migrate`` passes."""

from alembic import context

from saber.db.revision import VERSION_TABLE

connection = context.config.attributes["connection"]
context.configure(connection=connection, version_table=VERSION_TABLE, transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
