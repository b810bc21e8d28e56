"""Issue 13, the editor: palette search by keyboard, click-to-add next to the selected node, readable ids and
variable renames that follow, ELK auto-layout with loop frames, template previews, the live JSON check of
the test input, sticky notes, and dark mode."""

from __future__ import annotations

import re
from typing import Any

from graphs import ORDER_TRIAGE, chain, edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Locator, Page, expect

from conftest import Server, shot


def box(locator: Locator) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None
    return found


FLOW_BOX = """el => {
  const m = /translate\\(([-\\d.]+)px, *([-\\d.]+)px\\)/.exec(el.style.transform);
  return {x: Number(m[1]), y: Number(m[2]), width: el.offsetWidth, height: el.offsetHeight};
}"""


def flow_box(locator: Locator) -> dict[str, float]:
    """A node's box in flow coordinates (its own transform and size): unlike the screen box, it does not
    move while the view pans or zooms."""
    found: dict[str, float] = locator.evaluate(FLOW_BOX)
    return found


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def saved_definition(editor: EditorPage, server: Server, workflow_id: str, version: int) -> dict[str, Any]:
    editor.save()
    editor.expect_version(version)
    definition: dict[str, Any] = server.api("GET", f"/api/workflows/{workflow_id}")
    return definition


def test_nodes_are_added_from_the_keyboard_next_to_the_selected_node_and_wired_to_it(
    page: Page, server: Server
) -> None:
    wf = server.create_workflow(chain("Keyboard only", ("calc", "return {'value': 1}")))
    editor = EditorPage(page).open(wf["id"])
    editor.select("calc")

    page.keyboard.press("/")
    search = page.get_by_test_id("palette-search")
    expect(search).to_be_focused()
    search.press_sequentially("slee")  # the delay alone ("wai" also finds the wait node)
    expect(page.get_by_test_id("palette").locator(".palette__item")).to_have_count(1)
    expect(page.get_by_test_id("palette-delay")).to_be_visible()
    search.press("Enter")

    # the new node: a readable id, right of calc, wired from calc's first free handle (error)
    expect(editor.node("delay")).to_be_visible()
    expect(page.get_by_test_id("inspector")).to_have_attribute("data-node-id", "delay")
    expect(editor.edges()).to_have_count(3)
    # flow coordinates: opening the node panel pans the view, so screen boxes read apart can disagree
    calc = flow_box(editor.node("calc"))
    assert flow_box(editor.node("delay"))["x"] > calc["x"] + calc["width"]
    expect(search).to_have_value("")

    # ↓ then Enter picks the second match; a search with no match says so
    search.press_sequentially("zzz")
    expect(page.get_by_test_id("palette-empty")).to_be_visible()
    search.fill("")
    search.press_sequentially("o")  # Python, Loop, ... : ↓ takes the second
    first, second = (
        page.get_by_test_id("palette").locator(".palette__item").nth(0),
        page.get_by_test_id("palette").locator(".palette__item").nth(1),
    )
    expect(first).to_have_class(re.compile("is-active"))
    search.press("ArrowDown")
    expect(second).to_have_class(re.compile("is-active"))
    added_type = second.get_attribute("data-testid")
    search.press("Enter")
    assert added_type is not None
    new_type = added_type.removeprefix("palette-")
    expect(page.get_by_test_id("inspector")).to_have_attribute("data-node-id", re.compile(rf"^{new_type.lower()}"))
    shot(page, "editor-palette-keyboard")

    definition = saved_definition(editor, server, wf["id"], 2)
    assert {"source": "calc", "target": "delay", "sourceHandle": "error"} in [
        {k: e[k] for k in ("source", "target", "sourceHandle")} for e in definition["edges"]
    ]
    # the delay node had its only output free: the node added after it hangs from it
    assert any(e["source"] == "delay" and e["sourceHandle"] == "default" for e in definition["edges"])


def test_nodes_added_with_nothing_selected_never_land_on_each_other(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Free spots"))
    editor = EditorPage(page).open(wf["id"])
    page.locator(".react-flow__pane").click(position={"x": 30, "y": 30})
    page.keyboard.press("Escape")
    for _ in range(3):
        page.get_by_test_id("palette-python").click()
        page.keyboard.press("Escape")  # deselect: the next one is placed freely, not chained
    expect(editor.nodes()).to_have_count(5)
    boxes = [flow_box(editor.node(i)) for i in ("python", "python_2", "python_3", "start", "end")]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not overlap(a, b)
    expect(editor.edges()).to_have_count(1)  # nothing wired: nothing was selected


def test_renaming_an_output_variable_updates_what_refers_to_it_and_undo_restores(page: Page, server: Server) -> None:
    wf = server.create_workflow(ORDER_TRIAGE)
    editor = EditorPage(page).open(wf["id"])
    editor.select("score")
    variable = page.get_by_test_id("output-variable")
    variable.fill("count_items")
    variable.press("Enter")

    editor.select("big")
    expect(page.get_by_test_id("branch-0-expression")).to_have_value("ctx.count_items.value > 2")
    editor.select("end")
    expect(page.get_by_test_id("output-parameters").get_by_label("value of score")).to_have_value(
        "{{ ctx.count_items.value }}"
    )

    page.locator(".react-flow__pane").click(position={"x": 30, "y": 30})
    page.keyboard.press("Control+z")
    editor.select("end")
    expect(page.get_by_test_id("output-parameters").get_by_label("value of score")).to_have_value(
        "{{ ctx.score.value }}"
    )

    # a node's id follows its label: "Count items" -> count_items (unique), and its references follow
    page.locator(".react-flow__pane").click(position={"x": 30, "y": 30})
    page.get_by_test_id("palette-python").click()
    expect(page.get_by_test_id("inspector")).to_have_attribute("data-node-id", "python")
    label = page.get_by_test_id("node-label")
    label.fill("Count items")
    label.press("Enter")
    expect(page.get_by_test_id("inspector")).to_have_attribute("data-node-id", "count_items")
    expect(editor.node("count_items")).to_be_visible()
    # a Loop may not be ctx.loop (a reserved context key): it is loop_node
    page.locator(".react-flow__pane").click(position={"x": 30, "y": 30})
    page.get_by_test_id("palette-loop").click()
    expect(page.get_by_test_id("inspector")).to_have_attribute("data-node-id", "loop_node")


LOOPING_AND_BRANCHING: dict[str, Any] = {
    "title": "Layout",
    "nodes": [
        node("start", "start", 0, 0),
        node(
            "check",
            "condition",
            0,
            300,
            label="Check",
            config={"branches": [{"id": "yes", "label": "Yes", "expression": "ctx.input.wait"}]},
        ),
        node("wait", "delay", 0, 150, label="Wait", config={"seconds": 0}),
        node("each", "loop", 300, 300, label="Each item", config={"items": "{{ ctx.input.items }}"}),
        node("double", "python", 300, 0, label="Double", config={"code": "return ctx['loop']['item'] * 2"}),
        node("end", "end", 100, 100, joinMode="any", config={"outputParameters": {"out": "{{ ctx.each.items }}"}}),
    ],
    "edges": [
        edge("start", "check"),
        edge("check", "wait", "yes"),
        edge("wait", "each"),
        edge("check", "each", "else"),
        edge("each", "double", "loop"),
        edge("each", "end", "done"),
    ],
}


def test_auto_layout_routes_edges_and_frames_the_loop_body(page: Page, server: Server) -> None:
    wf = server.create_workflow(LOOPING_AND_BRANCHING)
    editor = EditorPage(page).open(wf["id"])
    frame = page.locator('[data-testid="loop-frame"][data-loop-id="each"]')
    expect(frame).to_have_count(1)  # drawn whatever the layout
    page.get_by_test_id("auto-layout").click()
    expect(page.locator(".fd-edge--routed")).to_have_count(6)
    ids = ["start", "check", "wait", "each", "double", "end"]
    boxes = {i: flow_box(editor.node(i)) for i in ids}
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            assert not overlap(boxes[a], boxes[b]), (a, b)
    # left to right by rank; the loop body inside its frame, everything else outside it
    assert boxes["start"]["x"] < boxes["check"]["x"] < boxes["wait"]["x"] < boxes["each"]["x"] < boxes["double"]["x"]
    framed = frame.evaluate(FLOW_BOX)
    for i in ids:
        inside = overlap(boxes[i], framed)
        assert inside == (i == "double"), i
    expect(frame).to_contain_text("Each item")
    shot(page, "editor-elk-layout")

    # undo puts the nodes back where they were: the routes no longer fit, the edges are curves again
    page.keyboard.press("Control+z")
    expect(page.locator(".fd-edge--routed")).to_have_count(0)


def test_template_previews_use_the_last_test_run(page: Page, server: Server) -> None:
    wf = server.create_workflow(ORDER_TRIAGE)
    editor = EditorPage(page).open(wf["id"])
    editor.select("end")
    preview = page.get_by_test_id("output-parameters").get_by_test_id("template-preview")
    expect(preview.first).to_have_attribute("data-state", "empty")
    expect(preview.first).to_contain_text("No test data yet")

    editor.set_test_input('{"items": [1, 2, 3]}')
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.select("end")
    expect(preview.first).to_have_attribute("data-state", "ok")
    expect(preview.first).to_contain_text("3")
    editor.select("big")
    expression = page.get_by_test_id("branch-editor").get_by_test_id("template-preview").first
    expect(expression).to_contain_text("true")
    page.get_by_test_id("branch-0-expression").fill("ctx.score.value > 5")
    expect(expression).to_contain_text("false")
    page.get_by_test_id("branch-0-expression").fill("ctx.nothing.value")
    expect(expression).to_have_attribute("data-state", "error")
    expect(expression).to_contain_text("'nothing' is undefined")
    shot(page, "editor-template-preview")


def test_the_test_input_is_checked_as_you_type(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Input"))
    editor = EditorPage(page).open(wf["id"])
    editor.set_test_input('{\n"a": }')
    error = page.get_by_test_id("test-input-error")
    expect(error).to_contain_text("Line 2, column 6")
    page.get_by_test_id("test-input").locator(".cm-content").click()  # the tab is open: type again
    page.keyboard.press("Control+A")
    page.keyboard.insert_text('{"a": 1}')
    expect(page.get_by_test_id("test-input-ok")).to_be_visible()
    expect(error).to_have_count(0)


def test_sticky_notes_are_edited_moved_saved_and_undone(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Notes"))
    editor = EditorPage(page).open(wf["id"])
    page.get_by_test_id("add-note").click()
    note = page.get_by_test_id("sticky-note")
    expect(note).to_have_count(1)
    note.get_by_test_id("sticky-note-text").fill("**Ask ops** before changing the SLA")
    before = box(note)
    handle = box(note.get_by_test_id("sticky-note-handle"))
    page.mouse.move(handle["x"] + 30, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(handle["x"] + 130, handle["y"] + 170, steps=8)  # below the nodes (notes lie behind them)
    page.mouse.up()
    moved = box(note)
    assert moved["x"] > before["x"] + 60 and moved["y"] > before["y"] + 40
    shot(page, "editor-sticky-note")

    definition = saved_definition(editor, server, wf["id"], 2)
    assert [n["text"] for n in definition["notes"]] == ["**Ask ops** before changing the SLA"]
    run = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {}})
    assert run["instanceId"]

    page.reload()  # a note with text shows it as Markdown; a click edits the source
    view = page.get_by_test_id("sticky-note-view")
    expect(view.locator("strong")).to_have_text("Ask ops")
    expect(view).to_have_text("Ask ops before changing the SLA")
    view.click()
    expect(page.get_by_test_id("sticky-note-text")).to_have_value("**Ask ops** before changing the SLA")
    expect(page.get_by_test_id("sticky-note-text")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("sticky-note-view")).to_be_visible()
    page.get_by_test_id("sticky-note-delete").click()
    expect(page.get_by_test_id("sticky-note")).to_have_count(0)
    page.keyboard.press("Control+z")
    expect(page.get_by_test_id("sticky-note")).to_have_count(1)
    page.keyboard.press("Control+z")  # nothing more to undo since the load: the note stays
    expect(page.get_by_test_id("sticky-note-view")).to_have_text("Ask ops before changing the SLA")


def test_dark_mode_follows_the_system_and_the_switch_persists(page: Page, server: Server) -> None:
    page.emulate_media(color_scheme="dark")
    page.goto("/")
    html = page.locator("html")
    expect(html).to_have_attribute("data-theme", "dark")
    page.emulate_media(color_scheme="light")
    expect(html).to_have_attribute("data-theme", "light")  # follows the system live

    toggle = page.get_by_test_id("theme-toggle")
    toggle.select_option("dark")
    expect(html).to_have_attribute("data-theme", "dark")
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background != "rgb(244, 245, 248)"
    page.reload()
    expect(html).to_have_attribute("data-theme", "dark")  # the choice persists over the light system setting
    wf = server.create_workflow(chain("Dark"))
    EditorPage(page).open(wf["id"])
    expect(page.locator(".react-flow.dark")).to_have_count(1)
    shot(page, "editor-dark")
    page.get_by_test_id("theme-toggle").select_option("system")
    expect(html).to_have_attribute("data-theme", "light")


LOOP_BODY: dict[str, Any] = {
    "title": "Loop body preview",
    "nodes": [
        node("start", "start", 0),
        node("each", "loop", 250, config={"items": "{{ ctx.input.items }}"}),
        node("double", "python", 500, config={"code": "return ctx['loop']['item'] * 2"}),
        node(
            "check",
            "condition",
            750,
            config={"branches": [{"id": "big", "label": "Big", "expression": "ctx.double > 1"}]},
        ),
        node("end", "end", 500, 250),
    ],
    "edges": [
        edge("start", "each"),
        edge("each", "double", "loop"),
        edge("double", "check", "success"),
        edge("each", "end", "done"),
    ],
}


def test_previews_in_a_loop_body_use_its_first_iteration(page: Page, server: Server) -> None:
    wf = server.create_workflow(LOOP_BODY)
    editor = EditorPage(page).open(wf["id"])
    editor.set_test_input('{"items": [1, 5, 7]}')
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.select("check")
    preview = page.get_by_test_id("branch-editor").get_by_test_id("template-preview").first
    expect(preview).to_have_attribute("data-state", "ok")
    expect(preview).to_contain_text("true")  # ctx.double of the first iteration: 2
    page.get_by_test_id("branch-0-expression").fill("[ctx.loop.item, ctx.loop.index, ctx.loop.count]")
    expect(preview).to_contain_text("[1,0,3]")
