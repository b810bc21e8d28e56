"""The switch and set nodes built from the palette on the canvas, wired, test-run: the case taken is lit,
the other branch is skipped; the End node returns the set node's output in one click."""

from __future__ import annotations

import json

from graphs import edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_switch_routes_to_a_set_node_and_skips_the_other_branch(page: Page, server: Server) -> None:
    wf = server.create_workflow(
        {
            "title": "Route and shape",
            "nodes": [node("start", "start", 0, 150), node("end", "end", 900, 150, config={"outputParameters": {}})],
            "edges": [edge("start", "end")],
        }
    )
    editor = EditorPage(page).open(wf["id"])
    editor.delete_edge(editor.edges().first)

    before = editor.node_ids()
    # apart: the switch grows with its ports and its problem text, and must not cover start's output
    editor.drag_from_palette("switch", 460, 260)
    route = editor.new_node_id("switch", before)
    before = editor.node_ids()
    editor.drag_from_palette("set", 760, 130)
    vip = editor.new_node_id("set", before)
    before = editor.node_ids()
    editor.drag_from_palette("set", 760, 440)
    other = editor.new_node_id("set", before)

    # the switch: its value and one case, "vip"; the canvas shows a port per case plus default
    editor.select(route)
    page.get_by_test_id("switch-value").fill("{{ ctx.input.kind }}")
    page.get_by_test_id("case-0-handle").fill("vip")
    page.get_by_test_id("case-0-text").fill("vip")
    expect(editor.node(route).locator(".fd-node__output span")).to_have_text(["vip", "default"])

    # the set nodes: a dotted name with a template, and a plain field
    editor.select(vip)
    page.get_by_test_id("set-field-0-name").fill("customer.name")
    page.get_by_test_id("set-field-0-value").fill("{{ ctx.input.who }}")
    editor.select(other)
    page.get_by_test_id("set-field-0-name").fill("tier")
    page.get_by_test_id("set-field-0-value").fill("standard")

    page.locator(".react-flow__pane").click(position={"x": 40, "y": 40})  # close the inspector's popups
    editor.connect_drawing("start", "default", route, edges_after=1)
    editor.connect_drawing(route, "vip", vip, edges_after=2)
    editor.connect_drawing(route, "default", other, edges_after=3)
    editor.connect_drawing(vip, "success", "end", edges_after=4)
    editor.connect_drawing(other, "success", "end", edges_after=5)

    # the End node returns the vip branch's output in one click
    editor.select("end")
    page.get_by_test_id(f"end-return-{vip}").click()
    expect(page.get_by_test_id("output-parameters").get_by_label("value of result")).to_have_value(
        f"{{{{ ctx.{vip} }}}}"
    )

    expect(page.get_by_test_id("problem-count")).to_have_text("0", timeout=5000)
    editor.set_test_input(json.dumps({"kind": "vip", "who": "Ada"}))
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.expect_status(route, "COMPLETED")
    editor.expect_status(vip, "COMPLETED")
    editor.expect_status(other, "SKIPPED")
    expect(editor.node_card(other).get_by_test_id("node-status")).to_have_text("Skipped")
    # lit: start -> switch -> vip -> end; marked not taken: switch -> other -> end
    expect(page.locator(".fd-edge--taken")).to_have_count(3)
    expect(page.locator(".fd-edge--not-taken")).to_have_count(2)
    expect(page.get_by_test_id("run-output")).to_contain_text('"name": "Ada"')
    shot(page, "editor-switch-set")
