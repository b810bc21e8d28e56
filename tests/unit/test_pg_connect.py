"""The connections Flowdeck opens outside its pool (LISTEN/NOTIFY, start-up checks) go where the pool's go: a TCP
host and port, or a Unix socket's directory given as ``?host=`` (SQLAlchemy's form for asyncpg)."""

from __future__ import annotations

from flowdeck.storage.pg_connect import connect_args


def test_a_unix_socket_directory_in_the_query_is_the_host() -> None:
    args = connect_args("postgresql+asyncpg://flowdeck@/flowdeck?host=/var/run/postgresql", "flowdeck-serve")
    assert args["host"] == "/var/run/postgresql"
    assert (args["user"], args["database"], args["port"]) == ("flowdeck", "flowdeck", 5432)
    assert args["server_settings"] == {"application_name": "flowdeck-serve"}


def test_a_tcp_host_and_port_are_taken_as_given() -> None:
    args = connect_args("postgresql+asyncpg://app:secret@db.internal:6432/runs")
    assert (args["host"], args["port"], args["user"], args["password"]) == ("db.internal", 6432, "app", "secret")
