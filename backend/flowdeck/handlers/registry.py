"""Node type -> handler. Built once by the app (or a test) and handed to validation and the engine."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flowdeck.handlers.base import NodeHandler
from flowdeck.handlers.condition import ConditionHandler
from flowdeck.handlers.delay import DelayHandler
from flowdeck.handlers.end import EndHandler
from flowdeck.handlers.loop import LoopHandler
from flowdeck.handlers.set_fields import SetHandler
from flowdeck.handlers.start import StartHandler
from flowdeck.handlers.switch import SwitchHandler

__all__ = ("HandlerRegistry", "builtin_handlers")


class HandlerRegistry:
    def __init__(self, handlers: Iterable[NodeHandler]) -> None:
        self._handlers: dict[str, NodeHandler] = {h.type_name: h for h in handlers}

    def add(self, handler: NodeHandler) -> None:
        """Add (or replace) the handler of ``handler.type_name``."""
        self._handlers[handler.type_name] = handler

    def get(self, node_type: str) -> NodeHandler | None:
        return self._handlers.get(node_type)

    def types(self) -> list[str]:
        return sorted(self._handlers)

    def default_handles(self) -> Mapping[str, str]:
        """The handle an edge without ``sourceHandle`` leaves from: the type's first (primary) handle."""
        return {name: h.handles[0] for name, h in self._handlers.items() if h.handles}


def builtin_handlers() -> list[NodeHandler]:
    """The handlers that need nothing from outside (no sandbox pool, no query engine)."""
    return [
        *(StartHandler(), EndHandler(), ConditionHandler(), DelayHandler(), LoopHandler()),
        *(SwitchHandler(), SetHandler()),
    ]
