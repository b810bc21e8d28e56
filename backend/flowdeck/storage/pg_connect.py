"""asyncpg's ``connect()`` arguments for a configured PostgreSQL URL: for the connections Flowdeck opens outside
its pool (the fan-out's LISTEN, the start-up checks). The pool's own come from SQLAlchemy, which reads the same URL:
``?host=/var/run/postgresql`` (a Unix socket's directory) is honoured by both."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import make_url

__all__ = ("connect_args",)


def connect_args(database_url: str, application_name: str | None = None) -> dict[str, Any]:
    url = make_url(database_url)
    host = url.query.get("host", url.host)
    args: dict[str, Any] = {
        "host": host if isinstance(host, str) else None,
        "port": url.port or 5432,
        "user": url.username,
        "password": url.password,
        "database": url.database,
    }
    if application_name is not None:
        args["server_settings"] = {"application_name": application_name}
    return args
