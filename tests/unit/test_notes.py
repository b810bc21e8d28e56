"""Sticky notes in a definition (SPEC §1 ``notes``): accepted as data, every bad field named, never executed."""

from __future__ import annotations

from typing import Any

from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.validation.definition import validate_definition
from tests.support.graphs import linear

REGISTRY = HandlerRegistry(builtin_handlers())


def problems_of(notes: Any) -> list[tuple[str, str | None]]:
    return [
        (p.code, p.path)
        for p in validate_definition(linear(2) | {"notes": notes}, REGISTRY)
        if p.code == "invalid_note"
    ]


def test_well_formed_notes_are_no_problem() -> None:
    notes = [
        {"id": "n1", "text": "Ask **ops** first", "position": {"x": 10, "y": -5.5}},
        {
            "id": "n2",
            "text": "",
            "position": {"x": 0, "y": 0},
            "size": {"width": 200, "height": 120},
            "color": "#fef08a",
        },
    ]
    assert problems_of(notes) == []
    assert problems_of(None) == []


def test_each_bad_field_is_named_by_note_and_path() -> None:
    notes = [
        {"id": "bad id!", "text": 3, "position": {"x": "1"}},
        {"id": "n", "text": "x", "position": {"x": 1, "y": 2}, "size": {"width": 0, "height": 10}, "color": "red; x"},
        {"id": "n", "text": "x", "position": {"x": 1, "y": 2}, "run": "print(1)"},
        "not a note",
    ]
    assert problems_of(notes) == [
        ("invalid_note", "notes[0].id"),
        ("invalid_note", "notes[0].text"),
        ("invalid_note", "notes[0].position"),
        ("invalid_note", "notes[1].size"),
        ("invalid_note", "notes[1].color"),
        ("invalid_note", "notes[2].id"),
        ("invalid_note", "notes[2].run"),
        ("invalid_note", "notes[3]"),
    ]
    assert problems_of({"id": "n"}) == [("invalid_note", "notes")]
    assert problems_of([{"id": f"n{i}", "text": "", "position": {"x": 0, "y": 0}} for i in range(201)]) == [
        ("invalid_note", "notes")
    ]


def test_a_note_message_names_the_note() -> None:
    problems = validate_definition(
        linear(2) | {"notes": [{"id": "todo", "text": 1, "position": {"x": 0, "y": 0}}]}, REGISTRY
    )
    assert [p.message for p in problems if p.code == "invalid_note"] == [
        "note 'todo': text must be a string of at most 10,000 characters"
    ]
