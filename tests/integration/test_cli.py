"""The ``flowdeck`` command, run as a user runs it (a real process, a real SQLite file)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from alembic.script import ScriptDirectory

from flowdeck.storage.migrate import alembic_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "order-triage.json"
HEAD = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def flowdeck(*args: str, tmp_path: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}",
        "FLOWDECK_SANDBOX_WORKERS": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "flowdeck", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin if stdin is not None else "",
    )


def test_run_shows_each_node_live_and_prints_the_output(tmp_path: Path) -> None:
    result = flowdeck("run", str(EXAMPLE), "--input", '{"items": [1, 2, 3, 4]}', tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("score" in line and "COMPLETED" in line and '"value": 4' in line for line in lines)
    assert any("big" in line and "COMPLETED" in line for line in lines)
    assert "run COMPLETED" in result.stdout
    output = json.loads(result.stdout[result.stdout.index("{\n") :])
    assert output == {"score": 4, "route": "large"}


def test_run_refuses_an_invalid_file_with_every_problem(tmp_path: Path) -> None:
    broken = json.loads(EXAMPLE.read_text())
    broken["edges"].append({"id": "back", "source": "big", "target": "score", "sourceHandle": "else"})
    broken["nodes"][1]["type"] = "pyhton"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    result = flowdeck("run", str(path), tmp_path=tmp_path)
    assert result.returncode == 2
    assert "unknown_node_type" in result.stderr and "pyhton" in result.stderr
    assert "run " not in result.stdout  # nothing was started


def test_run_reports_unreadable_input_json(tmp_path: Path) -> None:
    result = flowdeck("run", str(EXAMPLE), "--input", "{not json", tmp_path=tmp_path)
    assert result.returncode == 2
    assert "--input is not valid JSON" in result.stderr


def test_migrate_creates_the_schema_and_says_so_in_one_line(tmp_path: Path) -> None:
    result = flowdeck("migrate", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [f"database migrated to {HEAD}"] and result.stdout == ""
    assert (tmp_path / "cli.db").exists()
    again = flowdeck("migrate", tmp_path=tmp_path)
    assert again.stderr.splitlines() == [f"database already at the latest revision {HEAD}"]


def test_verbose_shows_the_log_that_is_quiet_by_default(tmp_path: Path) -> None:
    result = flowdeck("--verbose", "migrate", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "INFO alembic" in result.stderr and f"database migrated to {HEAD}" in result.stderr


def test_commands_that_make_a_secret_print_it_alone_on_stdout(tmp_path: Path) -> None:
    created = flowdeck("users", "create", "--email", "ops@acme.test", "--tenant", "acme", tmp_path=tmp_path)
    assert created.returncode == 0, created.stderr
    password = created.stdout.removesuffix("\n")
    assert len(password) >= 16 and "\n" not in password and " " not in password
    assert "INFO" not in created.stderr and "created user ops@acme.test in tenant acme" in created.stderr
    assert f"database migrated to {HEAD}" in created.stderr  # the fresh file was migrated first, in one line

    token = flowdeck("tokens", "create", "--email", "ops@acme.test", tmp_path=tmp_path)
    assert token.returncode == 0, token.stderr
    assert re.fullmatch(r"fdk_[A-Za-z0-9_-]+\n", token.stdout) and token.stderr == ""

    changed = flowdeck("users", "set-password", "--email", "ops@acme.test", tmp_path=tmp_path)
    assert changed.returncode == 0, changed.stderr
    new_password = changed.stdout.removesuffix("\n")
    assert len(new_password) >= 16 and new_password != password and "\n" not in new_password
    assert "password of ops@acme.test changed" in changed.stderr

    piped = flowdeck(
        "users", "set-password", "--email", "ops@acme.test", tmp_path=tmp_path, stdin="chosen-passphrase\n"
    )
    assert piped.returncode == 0 and piped.stdout == ""  # nothing made up, nothing printed on stdout


def test_bench_quick_prints_the_table_and_writes_every_workload_as_json(tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    result = flowdeck("bench", "--quick", "--json", str(report), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = {row["workload"]: row for row in json.loads(report.read_text())["results"]}
    drained = rows.pop("7 drain of 1000 queued chains of 5")  # queued at once, then drained (bench_scale.py)
    assert drained["runs"] == 1000 and drained["target"].startswith("all COMPLETED in ")
    assert set(rows) == {
        "1 chain of 20",
        "1 chain of 20 python",
        "2 diamond 1-10-1",
        "3 100 concurrent chains of 5",
        "4 fan-out 10",
        "4 fan-out 100",
        "4 fan-out 1000",
        "5 sandbox calls",
        "6 loop of 100",
        "6 delay lateness, ms",
        "6 retry lateness, ms",
        "7 quiet tenant's run, alone",
        "7 ... beside 60 busy runs of another tenant",
        "8 child of 5 alone",
        "8 parent calling it",
    }
    chain = rows["1 chain of 20"]
    assert chain["runs"] == 20 and chain["nodesPerRun"] == 20
    assert chain["msPerNode"] > 0 and chain["roundTripsPerNode"] > 1 and chain["commitsPerNode"] > 0
    assert rows["3 100 concurrent chains of 5"]["runs"] == 100
    assert "x fan-out 10" in rows["4 fan-out 1000"]["target"]
    assert rows["5 sandbox calls"]["runMsP99"] >= rows["5 sandbox calls"]["runMsP50"] > 0
    late = rows["6 delay lateness, ms"]
    assert late["runs"] == 20 and late["runMsP99"] >= late["runMsP50"] >= 0 and late["target"] == "p99 <= 50 ms"
    assert rows["6 retry lateness, ms"]["runs"] == 20  # every retry started again, and was measured
    assert rows["8 parent calling it"]["target"].endswith("ms per call above the child's own")
    assert "x alone" in rows["7 ... beside 60 busy runs of another tenant"]["target"]
    assert "Flowdeck benchmark on sqlite" in result.stdout and "roundTripsPerNode" in result.stdout
    assert "[##############################] 100/100" in result.stderr  # the progress bar of each workload


def test_serve_starts_quietly_with_one_migration_line(tmp_path: Path) -> None:
    """What a first `flowdeck serve` prints: where it runs, one migration line, the login link; no library chatter."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'serve.db'}"}
    serve = subprocess.Popen(
        [sys.executable, "-m", "flowdeck", "serve", "--port", str(port)],
        cwd=tmp_path,
        env={**env, "FLOWDECK_SANDBOX_WORKERS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert serve.stdout is not None
        lines = []
        for line in serve.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("or as admin@flowdeck.local"):
                break
    finally:
        serve.terminate()
        serve.communicate(timeout=30)
    assert f"database migrated to {HEAD}" in lines
    assert any(line.startswith("Flowdeck is ready") for line in lines)
    assert not [line for line in lines if "INFO" in line or "alembic" in line], lines
