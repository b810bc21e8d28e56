"""The backend's layers: lower packages never import higher ones, and modules stay short (README "Layout")."""

from __future__ import annotations

import ast
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[2] / "backend" / "flowdeck"
MAX_LINES = 600
# package -> the packages of flowdeck it must not import
FORBIDDEN = {
    "domain": {
        "accounts", "api", "engine", "handlers", "queries", "realtime", "sandbox", "storage", "triggers",
        "validation", "widgets",
    },
    "storage": {"api", "engine", "handlers", "queries", "realtime", "validation"},
    "sandbox": {"api", "engine", "handlers", "storage", "validation"},
    "queries": {"api", "engine", "handlers", "validation"},
    "handlers": {"api", "engine", "realtime", "validation"},
    "validation": {"api", "engine", "realtime", "storage"},
    "realtime": {"api"},
}  # fmt: skip


def modules() -> list[tuple[str, Path]]:
    found = [(str(p.relative_to(BACKEND)), p) for p in sorted(BACKEND.rglob("*.py"))]
    return [(name, path) for name, path in found if "migrations" not in Path(name).parts]


def flowdeck_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found.update(name.split(".")[1] for name in names if name.startswith("flowdeck."))
    return found


def test_no_layer_imports_a_layer_above_it() -> None:
    breaches = [
        f"{name} imports flowdeck.{package}"
        for name, path in modules()
        if name.split("/")[0] in FORBIDDEN
        for package in sorted(flowdeck_imports(path) & FORBIDDEN[name.split("/")[0]])
    ]
    assert breaches == []


def test_no_module_is_longer_than_600_lines() -> None:
    long = [
        f"{name}: {lines} lines"
        for name, path in modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert long == []
