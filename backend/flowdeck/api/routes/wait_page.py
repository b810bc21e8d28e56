"""The HTML of the form page of a ``wait`` node: small, self-contained, no script; every user text escaped."""

from __future__ import annotations

from html import escape
from typing import Final

from flowdeck.domain.wait_forms import FormField

__all__ = ("form_page", "message_page")

_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  body {{ margin: 0; background: #f8fafc; font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif;
    color: #0f172a; display: flex; justify-content: center; }}
  main {{ margin: 48px 16px; padding: 24px; max-width: 480px; width: 100%; background: #fff;
    border: 1px solid #e2e8f0; border-radius: 8px; }}
  h1 {{ font-size: 18px; margin: 0 0 4px; }} .tenant {{ color: #64748b; margin: 0 0 16px; }}
  label {{ display: block; margin: 12px 0 4px; font-weight: 600; }}
  input[type=text], input[type=number], select {{ width: 100%; box-sizing: border-box; padding: 6px 8px;
    border: 1px solid #cbd5e1; border-radius: 6px; font: inherit; }}
  .check {{ display: flex; gap: 8px; align-items: center; font-weight: 600; margin: 12px 0; }}
  button {{ margin-top: 20px; padding: 8px 16px; border: 0; border-radius: 6px; background: #2563eb;
    color: #fff; font: inherit; cursor: pointer; }}
</style></head>
<body><main>{body}</main></body></html>
"""


def _field(field: FormField) -> str:
    name, label = escape(field.name), escape(field.label) + (" *" if field.required else "")
    required = " required" if field.required else ""
    if field.type == "boolean":
        return f'<label class="check"><input type="checkbox" name="{name}" value="true"{required}> {label}</label>'
    head = f'<label for="f-{name}">{label}</label>'
    if field.type == "select":
        options = "".join(f'<option value="{escape(o)}">{escape(o)}</option>' for o in field.options)
        blank = "" if field.required else '<option value=""></option>'
        return f'{head}<select id="f-{name}" name="{name}"{required}>{blank}{options}</select>'
    kind = ' type="number" step="any"' if field.type == "number" else ' type="text"'
    return f'{head}<input id="f-{name}" name="{name}"{kind}{required}>'


def form_page(tenant_name: str, label: str, fields: list[FormField]) -> str:
    title = f"{tenant_name} · {label}"
    body = (
        f'<h1>{escape(label)}</h1><p class="tenant">{escape(tenant_name)}</p>'
        f'<form method="post">{"".join(_field(f) for f in fields)}<button type="submit">Submit</button></form>'
    )
    return _PAGE.format(title=escape(title), body=body)


def message_page(message: str, *, title: str = "Flowdeck") -> str:
    return _PAGE.format(title=escape(title), body=f"<p>{escape(message)}</p>")
