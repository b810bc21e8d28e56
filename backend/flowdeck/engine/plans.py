"""Run plans: the graph (and test-run pins) a run executes, loaded once and cached.

A production run reads its graph from the workflow version it runs on; a test run from its own
SYSTEM_SET row. Both are immutable; a partial retry "with the latest version" moves a FAILED run to
another version, so every process forgets the plan of a run it hears fail (``Engine``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from flowdeck.domain.flow_control import DEFAULT_PRIORITY
from flowdeck.domain.graph import Graph
from flowdeck.storage.children import ParentRef
from flowdeck.storage.flow import run_priority
from flowdeck.storage.state import DEFINITION_KEY, PINNED_KEY, StateManager
from flowdeck.storage.workflows import WorkflowStore

__all__ = ("PlanCache", "RunNotFoundError", "RunPlan")


class RunNotFoundError(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class RunPlan:
    instance_id: str
    tenant_id: str
    workflow_id: str | None
    is_test: bool
    graph: Graph
    pinned: Mapping[str, Any] = field(default_factory=dict)
    parent: ParentRef | None = None
    """The ``workflow`` node attempt that started this run (sub-workflows)."""
    depth: int = 0
    priority: int = DEFAULT_PRIORITY
    """Its node jobs' priority (storage/flow.py ``run_priority``): claims take them in aged-priority order."""


K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    def __init__(self, maxsize: int) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._maxsize = maxsize

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def pop(self, key: K) -> None:
        self._items.pop(key, None)

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._maxsize:
            self._items.popitem(last=False)


class PlanCache:
    def __init__(
        self, state: StateManager, workflows: WorkflowStore, default_handles: Mapping[str, str], maxsize: int = 4096
    ) -> None:
        self._state = state
        self._workflows = workflows
        self._default_handles = default_handles
        self._plans: _Lru[str, RunPlan] = _Lru(maxsize)
        self._graphs: _Lru[tuple[str, int], Graph] = _Lru(256)

    def build_graph(self, definition: Any) -> Graph:
        return Graph.from_json(definition, self._default_handles)

    def remember(self, plan: RunPlan) -> None:
        self._plans.put(plan.instance_id, plan)

    def forget(self, instance_id: str) -> None:
        """Read the run's plan afresh next time: a partial retry may move a failed run to another version."""
        self._plans.pop(instance_id)

    async def version_graph(self, workflow_id: str, version: int) -> Graph:
        graph = self._graphs.get((workflow_id, version))
        if graph is None:
            definition = await self._workflows.definition(workflow_id, version)
            if definition is None:
                raise RunNotFoundError(f"workflow {workflow_id} has no version {version}")
            graph = self.build_graph(definition)
            self._graphs.put((workflow_id, version), graph)
        return graph

    async def _priority(self, instance_id: str) -> int:
        async with self._state.db.read(snapshot=False) as conn:
            return await run_priority(conn, instance_id)

    async def get(self, instance_id: str) -> RunPlan:
        plan = self._plans.get(instance_id)
        if plan is not None:
            return plan
        instance = await self._state.get_instance(instance_id)
        if instance is None:
            raise RunNotFoundError(f"run {instance_id} does not exist")
        pinned: Mapping[str, Any] = {}
        if instance.is_test:
            stored = await self._state.load_test_definition(instance_id)
            if stored is None:
                raise RunNotFoundError(f"test run {instance_id} has no stored definition")
            graph = self.build_graph(stored[DEFINITION_KEY])
            pinned = stored.get(PINNED_KEY) or {}
        else:
            assert instance.workflow_id is not None and instance.workflow_version is not None
            graph = await self.version_graph(instance.workflow_id, instance.workflow_version)
        parent = None
        if instance.parent_instance_id is not None:
            parent = ParentRef(
                instance.parent_instance_id,
                instance.parent_node_id or "",
                instance.parent_iteration or "",
                instance.parent_attempt or 0,
            )
        plan = RunPlan(
            instance_id,
            instance.tenant_id,
            instance.workflow_id,
            instance.is_test,
            graph,
            pinned,
            parent,
            instance.depth,
            await self._priority(instance_id),
        )
        self._plans.put(instance_id, plan)
        return plan
