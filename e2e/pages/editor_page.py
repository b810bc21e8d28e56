"""Page object for the editor: finds things by data-testid and React Flow's data-id."""

from __future__ import annotations

import re
import time

from playwright.sync_api import FloatRect, Locator, Page, expect

# What a pointer at the element's centre would reach instead of it (a short description), or null.
_COVER_AT_CENTRE = """el => {
  const r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  if (hit === null) return 'nothing (off screen)';
  if (el.contains(hit)) return null;
  const node = hit.closest('.react-flow__node');
  const cls = typeof hit.className === 'string' ? hit.className : hit.getAttribute('class');
  return `<${hit.tagName.toLowerCase()} class="${cls}">` + (node ? ` of node ${node.dataset.id}` : '');
}"""

# The viewport point a quarter of the way along an SVG path.
_QUARTER_ALONG = """path => {
  const p = path.getPointAtLength(path.getTotalLength() / 4);
  const m = path.getScreenCTM();
  return { x: m.a * p.x + m.c * p.y + m.e, y: m.b * p.x + m.d * p.y + m.f };
}"""


class EditorPage:
    def __init__(self, page: Page) -> None:
        self.page = page

    def open(self, workflow_id: str) -> EditorPage:
        self.page.goto(f"/workflows/{workflow_id}")
        expect(self.page.get_by_test_id("editor")).to_have_attribute("data-loaded", "true")
        expect(self.page.get_by_test_id("canvas")).to_have_attribute("data-ready", "true")
        return self

    # -- canvas --------------------------------------------------------------------------------
    def node(self, node_id: str) -> Locator:
        return self.page.locator(f'.react-flow__node[data-id="{node_id}"]')

    def node_card(self, node_id: str) -> Locator:
        return self.node(node_id).get_by_test_id("flow-node")

    def nodes(self) -> Locator:
        return self.page.locator(".react-flow__node")

    def edges(self) -> Locator:
        return self.page.locator(".react-flow__edge")

    def handle(self, node_id: str, handle_id: str) -> Locator:
        return self.node(node_id).locator(f'.react-flow__handle[data-handleid="{handle_id}"]')

    def connect(self, source: str, handle: str, target: str) -> None:
        """Drag from a source handle to the target's input handle, with real mouse moves.

        Both handles are waited for first: a node that was just renamed (its id follows its label)
        is drawn again, and a box read before that would aim at where the handle no longer is.
        """
        for locator in (self.handle(source, handle), self.handle(target, "in")):
            expect(locator).to_be_visible()
            locator.scroll_into_view_if_needed()
        self.wait_for_still_canvas()
        start = self.reachable(self.handle(source, handle), f"{source}'s {handle!r} handle")
        end = self.reachable(self.handle(target, "in"), f"{target}'s input handle")
        mouse = self.page.mouse
        mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
        mouse.down()
        mouse.move(end["x"] + 20, end["y"] + 20, steps=8)
        mouse.move(end["x"] + end["width"] / 2, end["y"] + end["height"] / 2, steps=8)
        expect(self.page.locator(".react-flow__connectionline")).to_have_count(1)  # the drag is under way
        mouse.up()

    def reachable(self, locator: Locator, name: str, timeout: float = 3.0) -> FloatRect:
        """The element's box, once a pointer at its centre reaches it (``elementFromPoint`` is it or inside it).

        A node placed close to another grows when it shows ports and problems and can then cover the other's
        handle: a press there grabs the covering node and drags it, and no connection starts. That fails
        here, naming what covers the handle, rather than as a missing connection line later.
        """
        deadline = time.monotonic() + timeout
        while True:
            box = locator.bounding_box()
            assert box is not None, f"{name} is not on the page"
            cover = locator.evaluate(_COVER_AT_CENTRE)
            if cover is None:
                return box
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} is covered by {cover}: place the nodes apart")
            self.page.wait_for_timeout(100)

    def select_edge(self, edge: Locator) -> None:
        """Select an edge by clicking its path a quarter of the way along.

        Not its middle: hovering an editable edge shows the "+" (insert a node here) there, and a click
        that lands on it opens the node picker instead of selecting the edge.
        """
        selected = re.compile(r"\bselected\b")

        def click() -> None:
            point = edge.locator(".react-flow__edge-path").evaluate(_QUARTER_ALONG)
            self.page.mouse.click(point["x"], point["y"])

        click()
        try:
            expect(edge).to_have_class(selected, timeout=2000)
            return
        except AssertionError:  # a panel's pan moved the edge from under the click: once more, the canvas still
            self.wait_for_still_canvas()
        click()
        expect(edge).to_have_class(selected)

    def delete_edge(self, edge: Locator) -> None:
        """Select an edge (``select_edge``), then press Delete."""
        count = self.edges().count()
        self.select_edge(edge)
        self.page.keyboard.press("Delete")
        expect(self.edges()).to_have_count(count - 1)

    def wait_for_still_canvas(self) -> None:
        """Until the viewport has not moved for 0.6 s: a panel that opened pans the canvas to keep the
        selected node in view (after a double-click's 450 ms), and a drag aimed before that would miss."""
        viewport = self.page.locator(".react-flow__viewport")
        last, still_since, deadline = None, time.monotonic(), time.monotonic() + 5
        while time.monotonic() < deadline:
            now = viewport.evaluate("el => el.style.transform")
            if now != last:
                last, still_since = now, time.monotonic()
            elif time.monotonic() - still_since >= 0.6:
                return
            self.page.wait_for_timeout(100)

    def connect_drawing(self, source: str, handle: str, target: str, edges_after: int) -> None:
        """``connect``, for a connection that must be made; a drag that the loaded machine's Chromium
        dropped on the way (no edge and no refusal) is made again, at most twice."""
        for _ in range(3):
            self.connect(source, handle, target)
            try:
                expect(self.edges()).to_have_count(edges_after, timeout=3000)
                return
            except AssertionError:
                self.page.mouse.move(0, 0)
        expect(self.edges()).to_have_count(edges_after)

    def drag_from_palette(self, node_type: str, x: float, y: float) -> None:
        self.page.get_by_test_id(f"palette-{node_type}").drag_to(
            self.page.get_by_test_id("canvas"), target_position={"x": x, "y": y}
        )

    def new_node_id(self, node_type: str, before: set[str]) -> str:
        ids = set(self.nodes().evaluate_all("els => els.map(e => e.dataset.id)"))
        (new,) = [i for i in ids - before if i.startswith(node_type)]
        return new

    def node_ids(self) -> set[str]:
        return set(self.nodes().evaluate_all("els => els.map(e => e.dataset.id)"))

    def select(self, node_id: str) -> None:
        """Click a node and wait for the node panel to show it.

        The panel pans the canvas to reveal the node opened before, 450 ms after it opened (a double click's
        time): a click aimed just before that pan lands where the node was, on an edge or the pane. Then the
        canvas is waited still and the node clicked once more.
        """
        inspector = self.page.get_by_test_id("inspector")
        self.node(node_id).click()
        try:
            expect(inspector).to_have_attribute("data-node-id", node_id, timeout=2000)
            return
        except AssertionError:
            self.wait_for_still_canvas()
        self.node(node_id).click()
        expect(inspector).to_have_attribute("data-node-id", node_id)

    def expect_status(self, node_id: str, status: str, timeout: float = 15_000) -> None:
        expect(self.node_card(node_id)).to_have_attribute("data-status", status, timeout=timeout)

    # -- side panel ----------------------------------------------------------------------------
    def set_code(self, code: str) -> None:
        editor = self.page.get_by_test_id("python-code").locator(".cm-content")
        editor.click()
        self.page.keyboard.press("Control+A")
        self.page.keyboard.press("Delete")
        # CodeMirror auto-indents and closes brackets as one types; insert the text as a paste instead.
        self.page.keyboard.insert_text(code)

    def set_test_input(self, text: str) -> None:
        self.page.get_by_test_id("bottom-tab-input").click()
        editor = self.page.get_by_test_id("test-input").locator(".cm-content")
        editor.click()
        self.page.keyboard.press("Control+A")
        self.page.keyboard.insert_text(text)

    # -- toolbar -------------------------------------------------------------------------------
    def test_run(self) -> None:
        self.page.get_by_test_id("test-run-button").click()

    def expect_run_status(self, status: str, timeout: float = 20_000) -> None:
        expect(self.page.get_by_test_id("run-panel")).to_have_attribute("data-status", status, timeout=timeout)

    def tidy_up(self) -> None:
        """Shift+L, and wait until the auto-layout has finished: it runs asynchronously, and one landing after a
        save leaves the graph changed (a later navigation then asks to leave without saving)."""
        editor = self.page.get_by_test_id("editor")
        done = int(editor.get_attribute("data-layouts-done") or "0")
        self.page.keyboard.press("Shift+L")
        expect(editor).to_have_attribute("data-layouts-done", str(done + 1))

    def save(self) -> None:
        self.page.get_by_test_id("save-button").click()

    def expect_version(self, version: int) -> None:
        expect(self.page.get_by_test_id("workflow-version")).to_have_text(f"v{version}")

    def toast(self, pattern: str) -> Locator:
        return self.page.get_by_test_id("toast").filter(has_text=re.compile(pattern))
