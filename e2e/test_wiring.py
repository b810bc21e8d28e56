"""Issue 24 item 4, wiring like n8n: a connection dropped on empty canvas opens the node picker there and
the chosen node is placed and connected; an edge's "+" inserts a node between its ends (handles kept), and
one undo takes the insertion back. Also item 3 in the browser: `ctx.` completion, Enter types a newline."""

from __future__ import annotations

from typing import Any

from graphs import edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot

BRANCHY: dict[str, Any] = {
    "title": "Branchy",
    "nodes": [
        node("start", "start", 0, 120),
        node(
            "check",
            "condition",
            300,
            120,
            config={"branches": [{"id": "true", "label": "true", "expression": "ctx.input.ok"}]},
        ),
        node("done", "end", 620, 40),
        node("other", "end", 620, 260),
    ],
    "edges": [edge("start", "check"), edge("check", "done", "true"), edge("check", "other", "else")],
}


def edges_of(server: Server, editor: EditorPage, workflow_id: str, version: int) -> set[str]:
    editor.save()
    editor.expect_version(version)
    saved: dict[str, Any] = server.api("GET", f"/api/workflows/{workflow_id}")
    return {f"{e['source']}:{e['sourceHandle']}->{e['target']}" for e in saved["edges"]}


def test_a_connection_dropped_on_empty_canvas_opens_the_picker_and_connects_the_chosen_node(
    page: Page, server: Server
) -> None:
    wf = server.create_workflow(BRANCHY)
    editor = EditorPage(page).open(wf["id"])
    before = editor.node_ids()
    handle = editor.handle("check", "else")
    expect(handle).to_be_visible()
    start = handle.bounding_box()
    canvas = page.get_by_test_id("canvas").bounding_box()
    assert start is not None and canvas is not None
    drop = {"x": start["x"] + 140, "y": canvas["y"] + canvas["height"] - 120}
    mouse = page.mouse
    mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
    mouse.down()
    mouse.move(drop["x"] - 30, drop["y"] - 30, steps=8)
    mouse.move(drop["x"], drop["y"], steps=4)
    expect(page.locator(".react-flow__connectionline")).to_have_count(1)
    mouse.up()

    picker = page.get_by_test_id("node-picker")
    expect(picker).to_be_visible()
    expect(page.get_by_test_id("node-picker-search")).to_be_focused()
    expect(page.get_by_test_id("node-picker-start")).to_have_count(0)  # nothing may lead into a start
    box = picker.bounding_box()
    assert box is not None and abs(box["x"] - drop["x"]) < 40
    # near the bottom edge it opens above the drop point, inside the viewport
    assert abs(box["y"] + box["height"] - drop["y"]) < 12 and box["y"] >= 0
    page.keyboard.type("code")
    page.keyboard.press("Enter")
    expect(picker).to_have_count(0)

    new = editor.new_node_id("python", before)
    # the inspector opens on the new node and may pan the canvas to keep it in view: measure from the
    # handle it was drawn from, which moves with it, once the canvas is still
    expect(editor.node(new)).to_be_visible()
    editor.wait_for_still_canvas()
    placed, moved = editor.node(new).bounding_box(), handle.bounding_box()
    assert placed is not None and moved is not None
    dx, dy = drop["x"] - start["x"], drop["y"] - start["y"]
    assert abs(placed["x"] - (moved["x"] + dx)) < 40 and abs(placed["y"] - (moved["y"] + dy - 30)) < 60
    expect(page.get_by_test_id("inspector")).to_have_attribute("data-node-id", new)
    assert f"check:else->{new}" in edges_of(server, editor, wf["id"], 2)
    shot(page, "wiring-drop-on-canvas")


def test_the_plus_on_an_edge_inserts_a_node_between_its_ends_and_undo_restores_both(page: Page, server: Server) -> None:
    wf = server.create_workflow(BRANCHY)
    editor = EditorPage(page).open(wf["id"])
    before = editor.node_ids()
    true_edge = page.locator('.react-flow__edge[data-id="e_check_done_true"]')
    editor.select_edge(true_edge)  # a selected edge shows its "+" (hovering does too)
    plus = page.locator('[data-testid="edge-insert"][data-edge-id="e_check_done_true"]')
    expect(plus).to_be_visible()
    plus.click()
    expect(page.get_by_test_id("node-picker")).to_be_visible()
    expect(page.get_by_test_id("node-picker-end")).to_have_count(0)  # an end could not continue to `done`
    page.get_by_test_id("node-picker-search").fill("set")
    page.get_by_test_id("node-picker-set").click()

    new = editor.new_node_id("set", before)
    expect(editor.edges()).to_have_count(4)
    # `done` moves right to make room in a render after the insertion. The three boxes are compared within one
    # frame: read one by one they may come from different frames of the viewport's animation (a loaded
    # machine once read `done` before it moved and the new node after).
    page.wait_for_function(
        """([a, b, c]) => {
            const box = (id) => document.querySelector(`.react-flow__node[data-id="${id}"]`)?.getBoundingClientRect();
            const [check, inserted, done] = [box(a), box(b), box(c)];
            return check && inserted && done && check.right <= inserted.left && inserted.right <= done.left;
        }""",
        arg=["check", new, "done"],
    )
    shot(page, "wiring-insert-between")

    page.locator(".react-flow__pane").click(position={"x": 20, "y": 20})
    page.keyboard.press("Control+z")  # one step takes back the node, both edges and the moved `done`
    expect(editor.node(new)).to_have_count(0)
    expect(editor.edges()).to_have_count(3)
    page.keyboard.press("Control+y")
    expect(editor.node(new)).to_have_count(1)
    assert edges_of(server, editor, wf["id"], 2) == {
        "start:default->check",
        f"check:true->{new}",
        f"{new}:success->done",
        "check:else->other",
    }


def test_code_completion_opens_on_ctx_dot_and_enter_types_a_newline(page: Page, server: Server) -> None:
    wf = server.create_workflow(
        {
            "title": "Completion",
            "nodes": [
                node("start", "start", 0),
                node("score", "python", 280, outputVariable="score", config={"code": "return {'value': 1}"}),
                node("calc", "python", 560, config={"code": "return 1"}),
                node("end", "end", 840),
            ],
            "edges": [edge("start", "score"), edge("score", "calc", "success"), edge("calc", "end", "success")],
        }
    )
    editor = EditorPage(page).open(wf["id"])
    editor.select("calc")
    editor.set_code("x = ")
    page.keyboard.type("ctx.")
    options = page.locator(".cm-tooltip-autocomplete li")
    expect(options.first).to_be_visible()
    expect(page.locator(".cm-tooltip-autocomplete")).to_contain_text("ctx['score']")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("python-code").locator(".cm-line")).to_have_count(2)
    page.keyboard.type("y = ctx['sc")
    expect(page.locator(".cm-tooltip-autocomplete")).to_contain_text("ctx['score']")
    page.wait_for_timeout(100)  # CodeMirror ignores keys for 75 ms after the list (re)opens, against mistakes
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("python-code").locator(".cm-line").nth(1)).to_have_text("y = ctx['score']")
    # at the end of a long line, near the right edge of the window, the list still lies inside it
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.keyboard.type("label = 'a long text that runs on to the right edge' + ctx.")
    tooltip = page.locator(".cm-tooltip-autocomplete")
    expect(tooltip).to_be_visible()
    # CodeMirror shows a tooltip at top -10000px until its next measure places it: wait for that
    page.wait_for_function(
        "() => document.querySelector('.cm-tooltip-autocomplete')?.getBoundingClientRect().top > -1000"
    )
    box = tooltip.bounding_box()
    viewport = page.viewport_size
    assert box is not None and viewport is not None
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]
    assert box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]
    shot(page, "completion-at-the-right-edge")


def test_a_press_anywhere_on_an_input_dot_starts_a_wire_rather_than_moving_the_node(page: Page, server: Server) -> None:
    # three output rows: the middle of the node's left side, where the input dot sits, is beside the first row
    branches = [{"id": b, "label": b, "expression": f"ctx.input.{b}"} for b in ("a", "b")]
    wf = server.create_workflow(
        {
            "title": "Three ways",
            "nodes": [
                node("start", "start", 0, 120),
                node("check", "condition", 300, 120, config={"branches": branches}),
                *(node(f"to_{h}", "end", 620, 40 + 120 * i) for i, h in enumerate(("a", "b", "else"))),
            ],
            "edges": [edge("start", "check"), *(edge("check", f"to_{h}", h) for h in ("a", "b", "else"))],
        }
    )
    editor = EditorPage(page).open(wf["id"])
    dot, card = editor.handle("check", "in"), editor.node("check")
    expect(dot).to_be_visible()
    editor.wait_for_still_canvas()
    box, before = dot.bounding_box(), card.bounding_box()
    assert box is not None and before is not None
    # the dot's inner half, over the node's card
    mouse = page.mouse
    mouse.move(box["x"] + box["width"] * 0.8, box["y"] + box["height"] / 2)
    mouse.down()
    mouse.move(box["x"] - 120, box["y"] + 200, steps=8)
    expect(page.locator(".react-flow__connectionline")).to_have_count(1)
    mouse.up()
    expect(page.get_by_test_id("node-picker")).to_be_visible()  # dropped on empty canvas: what leads into it?
    expect(page.get_by_test_id("node-picker-search")).to_be_focused()  # its keys go there (under load, a frame later)
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("node-picker")).to_have_count(0)
    assert card.bounding_box() == before
