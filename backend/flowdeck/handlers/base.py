"""The handler contract (SPEC §2): ``execute(config, context, helpers) -> HandlerResult``.

Each node type is one class: its output handles, its config checks (used by validation) and its
``execute``. Config values named in ``template_fields`` are resolved against the context before
``execute`` runs; everything else reaches the handler as written. A failed attempt raises
``flowdeck.domain.errors.NodeError``; config checks return ``flowdeck.domain.errors.ConfigIssue``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from flowdeck.domain.labels import DEFAULT_LABEL_LIMITS, LabelLimits

if TYPE_CHECKING:
    from flowdeck.domain.errors import ConfigIssue

__all__ = ("ChildCall", "HandlerResult", "NodeHandler", "NodeHelpers", "Park")


def entries_with(config: Mapping[str, Any], key: str, field: str) -> list[tuple[int, str]]:
    """(index, value) of each entry of ``config[key]`` whose ``field`` is a string: what an unfinished config
    already says (its other entries are reported by ``config_issues``)."""
    entries = config.get(key)
    if not isinstance(entries, list):
        return []
    return [
        (index, entry[field])
        for index, entry in enumerate(entries)
        if isinstance(entry, dict) and isinstance(entry.get(field), str)
    ]


@dataclass(frozen=True, slots=True)
class ChildCall:
    """A ``workflow`` node's request: start this saved workflow version with ``input`` and wait for it."""

    workflow_id: str
    version: int
    input: Any
    definition: Any
    """The version's definition (a test run's child runs it as a test run, from its own log row)."""


@dataclass(frozen=True, slots=True)
class Park:
    """A ``wait`` node's request: park the node (no worker slot held) until it is resumed or ``seconds`` pass."""

    seconds: float
    waiting_for: Mapping[str, Any]
    """``{resumeOn, url}`` shown while it waits (the engine adds ``until``)."""


@dataclass(frozen=True, slots=True)
class HandlerResult:
    output: Any
    next_handle: str | None
    queue_delay: float | None = None
    logs: str | None = None
    iterations: list[Any] | None = None
    """Set by ``loop``: the engine runs the node's body once per item, then completes it on ``done``."""
    call: ChildCall | None = None
    """Set by ``workflow``: the engine starts the child run and parks the node until it ends."""
    park: Park | None = None
    """Set by ``wait``: the engine parks the node until its token is used or its timeout passes."""
    labels: Mapping[str, str] | None = None
    """Set by ``python`` (``ctx.label``): run labels, checked against the run's others and stored with the result."""


@dataclass(frozen=True, slots=True)
class NodeHelpers:
    instance_id: str
    tenant_id: str
    workflow_id: str | None
    node_id: str
    iteration: str
    attempt: int
    timeout_seconds: float
    is_test: bool
    depth: int = 0
    """How deeply the run is nested in sub-workflow calls (0: nothing called it)."""
    label_limits: LabelLimits = DEFAULT_LABEL_LIMITS
    """What ``ctx.label`` may set (the ``python`` node)."""
    wired_handles: frozenset[str] = frozenset()
    """The handles of the node that edges leave from (a ``wait`` node fails on a timeout nothing takes)."""
    previous: tuple[tuple[str, str], ...] = ()
    """(node id, output variable) of the sources of the node's incoming edges, in the definition's edge
    order, each once: what the ``set`` node's ``keepInput`` looks back at."""


class NodeHandler(ABC):
    type_name: ClassVar[str]
    handles: ClassVar[tuple[str, ...]] = ()
    template_fields: ClassVar[tuple[str, ...]] = ()
    confined: ClassVar[bool] = False
    """True when ``execute`` has no effect outside the engine (no I/O): it may then run before the
    decisions it follows are durable (early release, storage/database.py). Anything else waits."""
    parks: ClassVar[bool] = False
    """True when the node's job is parked while it waits (no worker slot held): its ``timeoutSeconds``
    may then be as long as a run's (validation/limits.py)."""

    def output_handles(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        """The handles edges may leave this node from, for this config."""
        return self.handles

    def expressions(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(path, source) of the bare expressions in ``config`` (a condition's branches), for the checks
        of the ``ctx`` names they read."""
        return []

    def code_reads(self, config: Mapping[str, Any]) -> set[str] | None:
        """The ``ctx`` keys the node's code reads, beyond its templates and expressions (``None``: cannot
        tell). Only a ``python`` node has code."""
        return set()

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        """Everything wrong with ``config`` for this type (empty when it fits)."""
        return []

    async def tenant_issues(self, tenant_id: str, config: Mapping[str, Any]) -> list[ConfigIssue]:
        """What is wrong with ``config`` for this tenant (an object it names is not the tenant's); checked on
        save, validate and test run, after ``config_issues`` found nothing."""
        return []

    @abstractmethod
    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        """Run one attempt. Raise ``NodeError`` to fail it."""
