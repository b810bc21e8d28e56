"""Speed of the editor as a user feels it (issue: a 300-node workflow opens in <= 1 s, the first node
lights within 300 ms of Test run). Measured and written to e2e/screenshots/speed.json, never asserted:
timing targets belong to benchmarks, not to tests that fail on a busy machine.

How the open is timed: from just before ``page.goto`` (Python's wall clock) to the first frame painted
after the editor is loaded, the canvas has settled (``data-ready``) and all 300 nodes are in the DOM,
as recorded in the page by a MutationObserver installed before the app's scripts run. The end is
recorded in the page rather than seen by polling with ``expect``: each failed poll of a Playwright
``expect`` builds an aria snapshot of the element it looks at (here the whole canvas) on the page's
main thread, which slowed the very render it was timing by up to several hundred ms."""

from __future__ import annotations

import json
import time
from typing import Any

from graphs import edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import SCREENSHOTS, Server, shot

# Installed with add_init_script: runs in every document before the app's scripts.
WATCH_OPEN = """(() => {
  const open = (window.__flowdeckOpen = {ready: null, painted: null});
  const check = () => {
    if (open.ready !== null || !location.pathname.startsWith('/workflows/')) return;
    const canvas = document.querySelector(
      '[data-testid="editor"][data-loaded="true"] [data-testid="canvas"][data-ready="true"]');
    if (!canvas || document.querySelectorAll('.react-flow__node').length !== 300) return;
    open.ready = performance.now();
    // rAF runs before the frame is painted; a task queued from it runs after.
    requestAnimationFrame(() => setTimeout(() => { open.painted = performance.timeOrigin + performance.now(); }, 0));
  };
  new MutationObserver(check).observe(document, {subtree: true, childList: true, attributes: true,
                                                 attributeFilter: ['data-ready', 'data-loaded']});
})()"""

WATCH_FIRST_LIGHT = """() => {
  const card = document.querySelector('.react-flow__node[data-id="start"] [data-testid="flow-node"]');
  window.__flowdeck = {clicked: null, lit: null};
  new MutationObserver(() => {
    if (window.__flowdeck.lit === null && card.getAttribute('data-status') !== 'IDLE') {
      window.__flowdeck.lit = performance.now();
    }
  }).observe(card, {attributes: true, attributeFilter: ['data-status']});
  document.querySelector('[data-testid="test-run-button"]').addEventListener(
    'click', () => { window.__flowdeck.clicked = performance.now(); }, {capture: true, once: true});
}"""


def wide(width: int) -> dict[str, Any]:
    """start -> ``width`` no-op delays in a grid -> end: ``width + 2`` nodes."""
    steps = [node(f"d{i}", "delay", 300 + (i // 20) * 240, (i % 20) * 90, config={"seconds": 0}) for i in range(width)]
    return {
        "title": f"{width + 2} nodes",
        "nodes": [node("start", "start", 0, 900), *steps, node("end", "end", 300 + (width // 20 + 1) * 240, 900)],
        "edges": [edge("start", s["id"]) for s in steps] + [edge(s["id"], "end") for s in steps],
    }


def test_a_300_node_workflow_opens_and_its_first_node_lights_at_once(page: Page, server: Server) -> None:
    workflow = server.create_workflow(wide(298))
    page.add_init_script(WATCH_OPEN)
    page.goto("/workflows")  # warm: the app's code is loaded, as for a user who opens a workflow from the list
    started = time.time()
    page.goto(f"/workflows/{workflow['id']}")
    page.wait_for_function("window.__flowdeckOpen.painted !== null", polling="raf")
    open_ms = page.evaluate("window.__flowdeckOpen.painted") - started * 1000
    editor = EditorPage(page)  # the usual checks, untimed: loaded, settled, 300 nodes
    expect(page.get_by_test_id("editor")).to_have_attribute("data-loaded", "true")
    expect(page.get_by_test_id("canvas")).to_have_attribute("data-ready", "true")
    expect(editor.nodes()).to_have_count(300)
    shot(page, "editor-300-nodes")

    page.evaluate(WATCH_FIRST_LIGHT)
    editor.test_run()
    page.wait_for_function("window.__flowdeck.lit !== null", polling="raf")  # see above: no expect polls while timing
    expect(editor.node_card("start")).not_to_have_attribute("data-status", "IDLE")
    first_light_ms = page.evaluate("window.__flowdeck.lit - window.__flowdeck.clicked")
    editor.expect_run_status("COMPLETED", timeout=60_000)
    editor.expect_status("end", "COMPLETED")

    SCREENSHOTS.mkdir(exist_ok=True)
    numbers = {"nodes": 300, "openMs": round(open_ms, 1), "firstNodeLitMs": round(first_light_ms, 1)}
    (SCREENSHOTS / "speed.json").write_text(json.dumps(numbers, indent=2))
    print(f"editor speed: {numbers}")
    assert first_light_ms > 0  # the start node lit after the click, not before


# Counts animation frames and the frames in which the canvas moved, until __flowdeckPan.stop is set.
WATCH_PAN = """() => {
  const viewport = document.querySelector('.react-flow__viewport');
  const pan = (window.__flowdeckPan = {frames: 0, moved: 0, start: performance.now(), end: null, stop: false});
  let last = viewport.style.transform;
  const tick = (now) => {
    pan.frames += 1;
    if (viewport.style.transform !== last) { pan.moved += 1; last = viewport.style.transform; }
    if (pan.stop) { pan.end = now; return; }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


def test_a_200_node_workflow_pans_under_the_mouse(page: Page, server: Server) -> None:
    """Frames per second while a mouse drag pans a 200-node canvas (counted with requestAnimationFrame
    in the page), added to speed.json; as above, measured and printed, not held to a target."""
    workflow = server.create_workflow(wide(198))
    editor = EditorPage(page).open(workflow["id"])
    expect(editor.nodes()).to_have_count(200)
    editor.wait_for_still_canvas()
    pane = page.locator(".react-flow__pane").bounding_box()
    assert pane is not None
    x, y = pane["x"] + 40, pane["y"] + 40  # top left: empty canvas (the grid starts at x=300)
    before = page.locator(".react-flow__viewport").evaluate("el => el.style.transform")
    page.evaluate(WATCH_PAN)
    mouse = page.mouse
    mouse.move(x, y)
    mouse.down()
    mouse.move(x + 400, y + 300, steps=120)
    mouse.up()
    page.evaluate("window.__flowdeckPan.stop = true")
    page.wait_for_function("window.__flowdeckPan.end !== null", polling="raf")
    pan = page.evaluate("window.__flowdeckPan")
    assert page.locator(".react-flow__viewport").evaluate("el => el.style.transform") != before  # it panned
    fps = pan["frames"] * 1000 / (pan["end"] - pan["start"])

    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / "speed.json"
    numbers = json.loads(path.read_text()) if path.is_file() else {}
    numbers.update({"panNodes": 200, "panFps": round(fps, 1), "panFramesMoved": pan["moved"]})
    path.write_text(json.dumps(numbers, indent=2))
    print(f"editor pan: {numbers}")
    assert pan["moved"] > 0
