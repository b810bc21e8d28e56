"""How a PostgreSQL server is told apart from Flowdeck's own, also for a role that may not read pg_control_system."""

from __future__ import annotations

from typing import Any

from flowdeck.queries.sql_guard import PostgresIdentity, postgres_identity


class _Conn:
    def __init__(self, *, control_allowed: bool) -> None:
        self.control_allowed = control_allowed
        self.asked: list[str] = []

    async def fetchrow(self, sql: str) -> Any:
        self.asked.append(sql)
        if "pg_control_system" in sql:
            if not self.control_allowed:
                raise PermissionError("permission denied for function pg_control_system")
            return ("app", "2026-11-24 00:58:14.5+00 port 5432", False, "7301")
        return ("app", "2026-11-24 00:58:14.5+00 port 5432", False)


async def test_one_round_trip_when_the_cluster_id_is_readable() -> None:
    conn = _Conn(control_allowed=True)
    assert await postgres_identity(conn) == PostgresIdentity("app", "7301", "2026-11-24 00:58:14.5+00 port 5432")
    assert len(conn.asked) == 1


async def test_start_time_and_port_stand_in_for_the_cluster_id() -> None:
    limited = await postgres_identity(_Conn(control_allowed=False))
    assert limited == PostgresIdentity("app", None, "2026-11-24 00:58:14.5+00 port 5432")
    own = PostgresIdentity("app", "7301", "2026-11-24 00:58:14.5+00 port 5432")
    assert limited.same_database(own) and own.same_database(limited)
    replica = PostgresIdentity("app", "7301", "2026-11-24 09:00:00+00 port 5433")  # same cluster id, other start
    assert replica.same_database(own)
    assert not PostgresIdentity("other", "7301", own.started).same_database(own)  # another database
    assert not PostgresIdentity("app", "9999", own.started).same_database(own)  # another cluster


def test_a_superuser_may_not_connect_to_the_server_of_flowdecks_own_database() -> None:
    own = PostgresIdentity("flowdeck", "7301", "t0")
    assert PostgresIdentity("flowdeck", "7301", "t0").refusal(own) is not None
    assert PostgresIdentity("reports", "7301", "t0").refusal(own) is None
    assert "superuser" in (PostgresIdentity("reports", "7301", "t0", powerful=True).refusal(own) or "")
    assert PostgresIdentity("reports", "4242", "t9", powerful=True).refusal(own) is None  # another server: theirs
