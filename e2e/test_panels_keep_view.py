"""Issue 24: panels never cover the work. Opening the node panel (right) or the bottom panel shrinks the
canvas; the node being worked on stays in sight, and no node is left under the minimap or the zoom controls."""

from __future__ import annotations

from graphs import edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot

# Spread wide and tall, so that a fit puts nodes at every edge of the canvas.
WIDE = {
    "title": "Wide",
    "nodes": [
        node("start", "start", 0, 0),
        node("mid", "delay", 700, 0, config={"seconds": 0}),
        node("far", "delay", 1500, 0, config={"seconds": 0}),
        node("low", "delay", 1500, 700, config={"seconds": 0}),
        node("end", "end", 0, 700, config={"outputParameters": {}}),
    ],
    "edges": [edge("start", "mid"), edge("mid", "far"), edge("far", "low"), edge("low", "end")],
}

# Whether a node lies inside the canvas and under neither the minimap nor the zoom controls.
IN_SIGHT = """(id) => {
  const r = document.querySelector(`.react-flow__node[data-id="${id}"]`).getBoundingClientRect();
  const c = document.querySelector('[data-testid="canvas"]').getBoundingClientRect();
  const inside = r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom;
  const covers = [...document.querySelectorAll('.react-flow__minimap, .react-flow__controls')]
    .map((e) => e.getBoundingClientRect()).filter((b) => b.width > 0 && b.height > 0);
  const under = covers.some((b) => r.left < b.right && b.left < r.right && r.top < b.bottom && b.top < r.bottom);
  return inside && !under;
}"""


def _in_sight(page: Page, node_id: str) -> None:
    page.wait_for_function(IN_SIGHT, arg=node_id, timeout=5_000)


def test_opening_the_node_panel_keeps_the_selected_node_in_sight(page: Page, server: Server) -> None:
    wf = server.create_workflow(WIDE)
    editor = EditorPage(page).open(wf["id"])
    expect(page.locator(".react-flow__minimap")).to_be_visible()
    for node_id in ("start", "mid", "far", "low", "end"):  # the first fit leaves the minimap and controls clear
        assert page.evaluate(IN_SIGHT, node_id), f"{node_id} is out of sight after the first fit"
    editor.select("far")  # the node panel opens on the right, where the node was
    _in_sight(page, "far")
    shot(page, "panel-keeps-node-in-sight")


def test_opening_the_bottom_panel_keeps_the_selected_node_in_sight(page: Page, server: Server) -> None:
    wf = server.create_workflow(WIDE)
    editor = EditorPage(page).open(wf["id"])
    editor.select("low")
    _in_sight(page, "low")
    page.get_by_test_id("bottom-tab-problems").click()  # the bottom panel opens below the canvas
    expect(page.get_by_test_id("bottom-panel")).to_have_class("bottom-panel is-open")
    _in_sight(page, "low")
