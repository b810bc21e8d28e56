"""Persistence: tables, the database handle, migrations and the stores that read and write them."""
