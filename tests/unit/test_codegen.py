"""The TypeScript the editor imports is what the Python writes (``flowdeck generate``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowdeck import codegen
from flowdeck.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("relative", sorted(codegen.GENERATED))
def test_the_committed_file_matches_the_python_it_is_generated_from(relative: str) -> None:
    committed = (ROOT / relative).read_text(encoding="utf-8")
    assert committed == codegen.GENERATED[relative](), f"{relative} is stale: run `flowdeck generate`"


def test_the_statuses_module_carries_the_table_order_and_terminal_statuses() -> None:
    text = codegen.render_statuses()
    terminal = 'new Set<NodeStatus>(["COMPLETED", "FAILED", "SKIPPED", "CANCELLED"])'
    assert f"TERMINAL_NODE_STATUSES: ReadonlySet<NodeStatus> = {terminal}" in text
    assert "  RETRYING: 4,\n  COMPLETED: 5," in text
    assert '{ source: "RETRYING", target: "RUNNING", nextAttempt: true,' in text


def test_generate_check_finds_a_hand_edited_copy_and_generate_repairs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "frontend" / "src").mkdir(parents=True)
    assert main(["generate", "--root", str(tmp_path), "--check"]) == 1  # missing
    assert main(["generate", "--root", str(tmp_path)]) == 0
    assert main(["generate", "--root", str(tmp_path), "--check"]) == 0
    target = tmp_path / "frontend/src/generated/statuses.ts"
    target.write_text(target.read_text().replace("RETRYING: 4", "RETRYING: 6"))
    assert main(["generate", "--root", str(tmp_path), "--check"]) == 1
    assert "frontend/src/generated/statuses.ts differs" in capsys.readouterr().out


def test_generate_refuses_a_directory_that_is_not_the_project(tmp_path: Path) -> None:
    assert main(["generate", "--root", str(tmp_path)]) == 2
    assert not any(tmp_path.iterdir())


def test_the_realtime_payloads_carry_every_field_the_server_sends() -> None:
    from flowdeck.domain.statuses import NodeStatus
    from flowdeck.engine.publisher import NodeUpdate
    from flowdeck.realtime.messages import node_message

    sent = node_message(NodeUpdate("r1", "a", "", NodeStatus.RETRYING, 1, 10.0, pinned=True, next_attempt_at=12.0))
    text = codegen.render_realtime()
    node_type = text.split("export type NodeUpdatePayload = {\n", 1)[1].split("};", 1)[0]
    assert [line.split(":")[0].strip() for line in node_type.splitlines()] == list(sent)
    assert "  status: NodeStatus;\n" in node_type
    assert "  nextAttemptAt: number | null;\n" in node_type
    assert "  nodes: Record<string, NodeState>;\n" in text
    assert 'node: "workflow_node_update",' in text


def test_generate_writes_the_openapi_document_the_app_serves(tmp_path: Path) -> None:
    target = tmp_path / "openapi.json"
    assert main(["generate", "--openapi", str(target)]) == 0
    document = json.loads(target.read_text(encoding="utf-8"))
    assert "/api/runs/{instance_id}" in document["paths"]
    node_state = document["components"]["schemas"]["NodeStateOut"]["properties"]
    assert {"pinned", "nextAttemptAt", "iterations"} <= set(node_state)
