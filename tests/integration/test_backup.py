"""``flowdeck backup`` and ``flowdeck restore`` as an operator runs them: real processes, a real SQLite file.

The main test backs up the database of a running ``flowdeck serve`` while 50 runs execute, restores it
over that database, and checks that every run that had finished when the backup was taken is there as
it was (its log rows compared one by one) and that every run still unfinished in the backup completes
once ``serve`` runs on the restored database.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES
from tests.integration.test_cli import HEAD
from tests.integration.test_drain import _call, _free_port, _until_listening, process, read_until
from tests.support.graphs import definition, edge, end, node

FLOWDECK = [sys.executable, "-m", "flowdeck"]
FINISHED = {status.value for status in TERMINAL_RUN_STATUSES}


def flowdeck(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FLOWDECK, *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def sqlite_env(database: Path) -> dict[str, str]:
    return {**os.environ, "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{database}", "FLOWDECK_SANDBOX_WORKERS": "1"}


def read(database: Path, query: str, *params: Any) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return connection.execute(query, params).fetchall()
    finally:
        connection.close()


def logs_of(database: Path, run_ids: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    marks = ", ".join("?" for _ in run_ids)
    rows = read(database, f"SELECT * FROM instance_logs WHERE instance_id IN ({marks}) ORDER BY log_id", *run_ids)
    by_run: dict[str, list[tuple[Any, ...]]] = {run_id: [] for run_id in run_ids}
    for row in rows:
        by_run[row[1]].append(row)
    return by_run


def statuses(database: Path) -> dict[str, str]:
    return dict(read(database, "SELECT id, status FROM instances"))  # type: ignore[arg-type]


async def wait_for(url: str, token: str, run_ids: list[str], timeout: float = 90) -> None:
    """Until every run is COMPLETED (a failure ends the wait at once)."""
    pending = list(run_ids)
    for _ in range(int(timeout / 0.1)):
        still = []
        for run_id in pending:
            status = _call(url, token, "GET", f"/api/runs/{run_id}")["status"]
            assert status not in FINISHED - {"COMPLETED"}, f"run {run_id} ended {status}"
            if status != "COMPLETED":
                still.append(run_id)
        if not (pending := still):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{len(pending)} runs never completed: {pending}")


GRAPH = definition(
    [
        node("start", "start"),
        node("wait", "delay", config={"seconds": "{{ ctx.input.wait }}"}),
        node("double", "python", config={"code": "return {'n': ctx['input']['n'] * 2}"}),
        end(params={"n": "{{ ctx.double.n }}"}),
    ],
    [edge("start", "wait"), edge("wait", "double"), edge("double", "end", "success")],
)
BUSY = definition(  # writes all along: 10 iterations of at least 0.4 s each, one after another
    [
        node("start", "start"),
        node("each", "loop", config={"items": "{{ ctx.input.items }}", "concurrency": 1}),
        node("nap", "delay", config={"seconds": 0.4}),
        node("work", "python", config={"code": "return {'ok': True}"}),
        end(params={"count": "{{ ctx.each.count }}"}),
    ],
    [edge("start", "each"), edge("each", "nap", "loop"), edge("nap", "work"), edge("each", "end", "done")],
)


@pytest.mark.slow
async def test_a_backup_taken_while_50_runs_execute_restores_them_finished_or_resumable(tmp_path: Path) -> None:
    database, backup = tmp_path / "flowdeck.db", tmp_path / "backup.db"
    port = _free_port()
    env = {**sqlite_env(database), "FLOWDECK_PORT": str(port)}
    assert flowdeck("migrate", env=env).returncode == 0
    made = subprocess.run(
        [*FLOWDECK, "users", "create", "--email", "ops@acme.test", "--tenant", "acme"],
        input="a long password 1\n", env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert made.returncode == 0
    token = flowdeck("tokens", "create", "--email", "ops@acme.test", env=env).stdout.strip()
    url = f"http://127.0.0.1:{port}"

    with process([*FLOWDECK, "serve"], env) as serve:
        read_until(serve, "Flowdeck is ready")
        await _until_listening(url)
        workflow_id = _call(url, token, "POST", "/api/workflows", GRAPH)["id"]
        busy_id = _call(url, token, "POST", "/api/workflows", BUSY)["id"]
        fast, slow = [], []
        for n in range(40):  # every other run waits 10 s in its delay node: still unfinished at the backup
            wait = 10 if n % 2 else 0
            run = _call(url, token, "POST", f"/api/workflows/{workflow_id}/runs", {"input": {"n": n, "wait": wait}})
            (slow if wait else fast).append(run["instanceId"])
        await wait_for(url, token, fast)
        busy = [  # running, and writing their log, while the backup is taken
            _call(url, token, "POST", f"/api/workflows/{busy_id}/runs", {"input": {"items": list(range(10))}})
            for _ in range(10)
        ]

        taken = flowdeck("backup", str(backup), env=env)  # while serve runs
        assert taken.returncode == 0, taken.stderr
        assert "backup: " in taken.stderr and "pages (100%)" in taken.stderr
        assert f"(revision {HEAD}) to {backup}" in taken.stderr

        refused = flowdeck("restore", str(backup), env=env)
        assert refused.returncode == 1
        assert f"the database {database} is in use" in refused.stderr
        os.killpg(serve.pid, signal.SIGTERM)
        assert serve.wait(60) in (0, -signal.SIGTERM)

    in_backup = statuses(backup)
    finished = sorted(run_id for run_id, status in in_backup.items() if status in FINISHED)
    unfinished = sorted(run_id for run_id, status in in_backup.items() if status not in FINISHED)
    busy_ids = {run["instanceId"] for run in busy}
    assert set(fast) <= set(finished) and len(in_backup) == 50
    assert set(unfinished) - busy_ids <= set(slow) and set(unfinished) & set(slow)  # some still in their delay
    assert set(unfinished) & busy_ids  # taken mid-way through the busy runs' loops
    assert all(in_backup[run_id] == "COMPLETED" for run_id in finished)
    before = logs_of(database, finished)  # the served database, as serve left it
    assert all(len(rows) >= 8 for rows in before.values())

    restored = flowdeck("restore", str(backup), env=env)  # over the database, now that nothing uses it
    assert restored.returncode == 0, restored.stderr
    assert "restore: " in restored.stderr and "pages (100%)" in restored.stderr
    assert f"checking {backup} (SQLite quick_check, schema revision)" in restored.stderr
    assert logs_of(database, finished) == before
    assert statuses(database) == in_backup

    with process([*FLOWDECK, "serve"], env) as serve:
        read_until(serve, "Flowdeck is ready")
        await _until_listening(url)
        await wait_for(url, token, unfinished)
        for run_id in unfinished:
            output = _call(url, token, "GET", f"/api/runs/{run_id}")["output"]
            assert output == {"count": 10} if run_id in busy_ids else output["n"] % 2 == 0
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(60)
    assert logs_of(database, finished) == before  # serving the restored database changed no finished run


def test_backup_refuses_to_overwrite_a_file_unless_forced(tmp_path: Path) -> None:
    env = sqlite_env(tmp_path / "flowdeck.db")
    assert flowdeck("migrate", env=env).returncode == 0
    target = tmp_path / "copy.db"
    target.write_text("an earlier backup the operator wants to keep")
    refused = flowdeck("backup", str(target), env=env)
    assert refused.returncode == 1
    assert "copy.db already exists: choose another path, or pass --force" in refused.stderr
    assert target.read_text() == "an earlier backup the operator wants to keep"
    forced = flowdeck("backup", "--force", str(target), env=env)
    assert forced.returncode == 0, forced.stderr
    assert read(target, "SELECT version_num FROM alembic_version") == [(HEAD,)]
    assert target.stat().st_mode & 0o777 == 0o600  # it holds hashes, encrypted secrets and every run
    assert not list(tmp_path.glob(".*.partial")) and not (tmp_path / "copy.db-wal").exists()  # one file
    nowhere = flowdeck("backup", str(tmp_path / "no-such-folder" / "copy.db"), env=env)
    assert nowhere.returncode == 1 and "its folder does not exist" in nowhere.stderr


def test_restore_refuses_a_database_another_program_has_open(tmp_path: Path) -> None:
    database = tmp_path / "flowdeck.db"
    env = sqlite_env(database)
    assert flowdeck("migrate", env=env).returncode == 0
    assert flowdeck("backup", str(tmp_path / "copy.db"), env=env).returncode == 0
    holder = sqlite3.connect(database)  # an idle connection, as a serve between two runs has
    try:
        holder.execute("PRAGMA journal_mode=WAL")  # as every Flowdeck connection sets it
        holder.execute("SELECT count(*) FROM instances").fetchall()
        refused = flowdeck("restore", str(tmp_path / "copy.db"), env=env)
    finally:
        holder.close()
    assert refused.returncode == 1 and "is in use" in refused.stderr
    assert flowdeck("restore", str(tmp_path / "copy.db"), env=env).returncode == 0  # once it is closed


def test_restore_checks_the_backup_is_a_flowdeck_database_it_knows(tmp_path: Path) -> None:
    database = tmp_path / "flowdeck.db"
    env = sqlite_env(database)
    assert flowdeck("migrate", env=env).returncode == 0
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)")
    newer = tmp_path / "newer.db"
    assert flowdeck("backup", str(newer), env=env).returncode == 0
    with sqlite3.connect(newer) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")

    for path, message in (
        (tmp_path / "missing.db", "there is no backup at"),
        (text, "is not a SQLite database"),
        (other, "is not a Flowdeck database (it has no alembic_version table)"),
        (newer, "is at schema revision 9999, which this version of Flowdeck does not know"),
    ):
        refused = flowdeck("restore", str(path), env=env)
        assert refused.returncode == 1 and message in refused.stderr, refused.stderr
    assert read(database, "SELECT version_num FROM alembic_version") == [(HEAD,)]  # untouched


def test_restore_brings_an_older_backup_to_the_latest_revision(tmp_path: Path) -> None:
    from alembic import command

    from flowdeck.storage.migrate import alembic_config

    old = tmp_path / "old.db"
    command.upgrade(alembic_config(f"sqlite+aiosqlite:///{old}"), "0001")
    env = sqlite_env(tmp_path / "flowdeck.db")
    restored = flowdeck("restore", str(old), env=env)
    assert restored.returncode == 0, restored.stderr
    assert f"taken at revision 0001, now at {HEAD}" in restored.stderr
    assert read(tmp_path / "flowdeck.db", "SELECT version_num FROM alembic_version") == [(HEAD,)]
    assert read(old, "SELECT version_num FROM alembic_version") == [("0001",)]  # the backup is never changed


@pytest.mark.parametrize("command", ["backup", "restore"])
def test_on_postgresql_it_prints_the_command_to_use_without_the_password(command: str, tmp_path: Path) -> None:
    env = {**os.environ, "FLOWDECK_DATABASE_URL": "postgresql+asyncpg://flow:s3cret@db.internal:5433/flowdeck"}
    result = flowdeck(command, str(tmp_path / "flowdeck.dump"), env=env)
    assert result.returncode == 0, result.stderr
    tool = "pg_dump --format=custom" if command == "backup" else "pg_restore --clean --if-exists"
    assert tool in result.stdout and "--host=db.internal --port=5433 --username=flow" in result.stdout
    assert "s3cret" not in result.stdout + result.stderr and "PGPASSWORD" in result.stdout
    assert not (tmp_path / "flowdeck.dump").exists()
