"""Sticky notes of a workflow (SPEC §1 ``notes``): shown on the canvas, versioned, never executed.

``notes: [{id, text, position: {x, y}, size?: {width, height}, color?}]``. They are checked here as raw JSON
(every problem at once, naming the note) and stored as they came; the engine never reads them.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from flowdeck.domain.problems import Problem

__all__ = ("MAX_NOTES", "MAX_NOTE_CHARS", "note_problems")

MAX_NOTES: Final = 200
MAX_NOTE_CHARS: Final = 10_000
MAX_NOTE_SIZE: Final = 4000.0
_NOTE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_COLOR = re.compile(r"#[0-9A-Fa-f]{6}|[a-z]{1,20}")
_KEYS: Final = ("id", "text", "position", "size", "color")


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _problem(index: int, note_id: str | None, path: str, message: str) -> Problem:
    where = f"note '{note_id}'" if note_id else f"notes[{index}]"
    return Problem("invalid_note", f"{where}: {message}", "error", None, None, f"notes[{index}].{path}")


def _note_problems(index: int, raw: Any, seen: set[str]) -> list[Problem]:
    if not isinstance(raw, dict):
        return [Problem("invalid_note", f"notes[{index}] must be an object", "error", None, None, f"notes[{index}]")]
    problems: list[Problem] = []
    note_id = raw.get("id")
    shown = note_id if isinstance(note_id, str) and _NOTE_ID.fullmatch(note_id) else None
    if shown is None:
        problems.append(_problem(index, None, "id", "id must be 1-64 characters of A-Z, a-z, 0-9, _ and -"))
    elif shown in seen:
        problems.append(_problem(index, shown, "id", "another note has the same id"))
    else:
        seen.add(shown)
    for key in raw:
        if key not in _KEYS:
            problems.append(_problem(index, shown, str(key)[:40], f"unknown field; known: {', '.join(_KEYS)}"))
    text = raw.get("text", "")
    if not isinstance(text, str) or len(text) > MAX_NOTE_CHARS:
        problems.append(
            _problem(index, shown, "text", f"text must be a string of at most {MAX_NOTE_CHARS:,} characters")
        )
    position = raw.get("position")
    if not (isinstance(position, dict) and _finite(position.get("x")) and _finite(position.get("y"))):
        problems.append(_problem(index, shown, "position", "position must be {x, y} with two numbers"))
    size = raw.get("size")
    if size is not None and not (
        isinstance(size, dict)
        and all(_finite(size.get(k)) and 0 < size[k] <= MAX_NOTE_SIZE for k in ("width", "height"))
    ):
        problems.append(
            _problem(
                index, shown, "size", f"size must be {{width, height}}, each above 0 and at most {MAX_NOTE_SIZE:g}"
            )
        )
    color = raw.get("color")
    if color is not None and not (isinstance(color, str) and _COLOR.fullmatch(color)):
        problems.append(_problem(index, shown, "color", "color must be '#rrggbb' or a colour name"))
    return problems


def note_problems(notes: Any) -> list[Problem]:
    """Every problem of a definition's ``notes`` (absent or ``null`` is no notes)."""
    if notes is None:
        return []
    if not isinstance(notes, list):
        return [Problem("invalid_note", "notes must be a list of notes", "error", None, None, "notes")]
    if len(notes) > MAX_NOTES:
        return [
            Problem(
                "invalid_note",
                f"the workflow has {len(notes):,} notes; the limit is {MAX_NOTES}",
                "error",
                None,
                None,
                "notes",
            )
        ]
    seen: set[str] = set()
    return [p for index, raw in enumerate(notes) for p in _note_problems(index, raw, seen)]
