"""What one read of a run shows of its outputs: each in full while it is small, else truncated.

``GET /api/runs/{id}``, the live snapshot and the live node and status updates go through here, so
no read answers more than a bounded body however large the run's outputs (up to
``FLOWDECK_MAX_RUN_BYTES`` stored). An output larger than ``SHOWN_OUTPUT_BYTES``, or one that comes
after the read already showed ``SHOWN_READ_BYTES`` in full, is replaced by ``null`` and an
``outputTruncated`` object: its size in bytes, the start of its JSON and the address that returns
it in full (``GET /api/runs/{id}/nodes/{nodeId}/output?iteration=...``, or ``/api/runs/{id}/output``).
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import quote

import msgspec

__all__ = ("PREVIEW_BYTES", "SHOWN_OUTPUT_BYTES", "SHOWN_READ_BYTES", "ShownOutputs", "output_href")

SHOWN_OUTPUT_BYTES: Final = 64 * 1024
"""An output larger than this (as JSON) is shown truncated."""
SHOWN_READ_BYTES: Final = 1024 * 1024
"""One read shows at most this many bytes of outputs in full; the rest truncated."""
PREVIEW_BYTES: Final = 512
"""How much of a truncated output's JSON is shown."""

_encoder = msgspec.json.Encoder()


def output_href(run_id: str, node_id: str | None, iteration: str = "") -> str:
    """Where one node's (or iteration's) full output is read; the run's own output without ``node_id``."""
    if node_id is None:
        return f"/api/runs/{quote(run_id, safe='')}/output"
    href = f"/api/runs/{quote(run_id, safe='')}/nodes/{quote(node_id, safe='')}/output"
    return f"{href}?iteration={quote(iteration, safe='')}" if iteration else href


class ShownOutputs:
    """The outputs of one read: what it still shows in full, and how each output is shown."""

    def __init__(self, run_id: str, read_bytes: int = SHOWN_READ_BYTES) -> None:
        self.run_id = run_id
        self.left = read_bytes

    def show(self, value: Any, node_id: str | None, iteration: str = "") -> tuple[Any, dict[str, Any] | None]:
        """``(output, None)`` when shown in full, else ``(None, {bytes, preview, href})``."""
        if value is None or isinstance(value, bool | int | float):
            return value, None
        encoded = _encoder.encode(value)
        size = len(encoded)
        if size <= SHOWN_OUTPUT_BYTES and size <= self.left:
            self.left -= size
            return value, None
        preview = encoded[:PREVIEW_BYTES].decode("utf-8", errors="ignore")
        return None, {"bytes": size, "preview": preview, "href": output_href(self.run_id, node_id, iteration)}

    def loop(self, loop: dict[str, Any] | None, node_id: str, iteration: str) -> dict[str, Any] | None:
        """An iteration's ``ctx.loop`` with its item shown this way (a truncated item has no address of its own)."""
        if loop is None or "item" not in loop:
            return loop
        item, truncated = self.show(loop["item"], node_id, iteration)
        if truncated is None:
            return loop
        return {**loop, "item": item, "itemTruncated": {"bytes": truncated["bytes"], "preview": truncated["preview"]}}

    def node_json(self, data: dict[str, Any], node_id: str, iteration: str = "") -> dict[str, Any]:
        """A node's ``NodeView.to_json()`` with its output (and its iterations') shown this way."""
        output, truncated = self.show(data.get("output"), node_id, iteration)
        shown = {**data, "output": output}
        if data.get("loop") is not None:
            shown["loop"] = self.loop(data["loop"], node_id, iteration)
        if truncated is not None:
            shown["outputTruncated"] = truncated
        iterations = data.get("iterations")
        if iterations:
            shown["iterations"] = {key: self.node_json(view, node_id, key) for key, view in iterations.items()}
        return shown
