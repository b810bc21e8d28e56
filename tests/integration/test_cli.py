"""The ``flowdeck`` command, run as a user runs it (a real process, a real SQLite file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "order-triage.json"


def flowdeck(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}",
        "FLOWDECK_SANDBOX_WORKERS": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "flowdeck", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
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


def test_migrate_creates_the_schema(tmp_path: Path) -> None:
    result = flowdeck("migrate", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "latest schema" in result.stdout
    assert (tmp_path / "cli.db").exists()


def test_bench_quick_prints_the_table_and_writes_every_workload_as_json(tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    result = flowdeck("bench", "--quick", "--json", str(report), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = {row["workload"]: row for row in json.loads(report.read_text())["results"]}
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
    }
    chain = rows["1 chain of 20"]
    assert chain["runs"] == 20 and chain["nodesPerRun"] == 20
    assert chain["msPerNode"] > 0 and chain["roundTripsPerNode"] > 1 and chain["commitsPerNode"] >= 1
    assert rows["3 100 concurrent chains of 5"]["runs"] == 100
    assert "x fan-out 10" in rows["4 fan-out 1000"]["target"]
    assert rows["5 sandbox calls"]["runMsP99"] >= rows["5 sandbox calls"]["runMsP50"] > 0
    late = rows["6 delay lateness, ms"]
    assert late["runs"] == 20 and late["runMsP99"] >= late["runMsP50"] >= 0 and late["target"] == "p99 <= 50 ms"
    assert rows["6 retry lateness, ms"]["runs"] == 20  # every retry started again, and was measured
    assert "x alone" in rows["7 ... beside 60 busy runs of another tenant"]["target"]
    assert "Flowdeck benchmark on sqlite" in result.stdout and "roundTripsPerNode" in result.stdout
    assert "[##############################] 100/100" in result.stderr  # the progress bar of each workload
