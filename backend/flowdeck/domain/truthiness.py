"""Seed 002's truthiness for strings that came from outside (webhook bodies, form fields, CSV cells).

Templates and expressions keep Python's truthiness for native values; ``is truthy`` and ``|truthy``
also treat these strings, in any case and with surrounding spaces, as false: a webhook that sends
``"active": "false"`` means false, though a non-empty string is true to Python.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ("FALSE_STRINGS", "is_truthy")

FALSE_STRINGS: Final = frozenset({"", "0", "false", "no", "none", "null", "off"})


def is_truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in FALSE_STRINGS
    return bool(value)
