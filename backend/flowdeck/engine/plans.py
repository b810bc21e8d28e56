"""Run plans: the graph (and test-run pins) a run executes, loaded once and cached.

A production run reads its graph from the workflow version it runs on; a test run from its own
SYSTEM_SET row. Both are immutable; a partial retry "with the latest version" moves a FAILED run to
another version, so every process forgets the plan of a run it hears fail (``Engine``).

A plan is loaded once however many of its run's jobs ask for it at the same moment: a worker process
that claims a batch of a wide fan-out it has not seen yet would otherwise read and build the graph once
per job (measured: 98 builds of a 1,000-node graph instead of 8 in a fan-out run twice by four worker
processes, most of what four processes spent beyond one).

Test runs of one definition share its graph: the editor's **Test run** clicked again on an unchanged graph,
or a benchmark's repeated test runs, would otherwise build the same graph once per run in every process
that runs one of its nodes (17 ms for 1,000 nodes on this machine, against 0.45 ms to serialise and hash
the definition that identifies it).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from flowdeck.domain.flow_control import DEFAULT_PRIORITY
from flowdeck.domain.graph import Graph
from flowdeck.storage.children import ParentRef
from flowdeck.storage.flow import run_priority
from flowdeck.storage.json_codec import json_dumps
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


class _Loaded(Generic[K, V]):
    """An LRU whose missing values are loaded once however many callers ask at the same moment."""

    def __init__(self, maxsize: int) -> None:
        self._items: _Lru[K, V] = _Lru(maxsize)
        self._loading: dict[K, asyncio.Future[V]] = {}

    async def get(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        value = self._items.get(key)
        if value is not None:
            return value
        loading = self._loading.get(key)
        if loading is None:
            loading = self._loading[key] = asyncio.ensure_future(load())
            loading.add_done_callback(functools.partial(self._loaded, key))
        return await asyncio.shield(loading)  # one caller cancelled does not cancel the others' load

    def put(self, key: K, value: V) -> None:
        self._items.put(key, value)

    def forget(self, key: K) -> None:
        self._items.pop(key)
        self._loading.pop(key, None)  # a load under way may read what is outdated now: not kept

    def _loaded(self, key: K, loading: asyncio.Future[V]) -> None:
        failed = loading.cancelled() or loading.exception() is not None  # (its callers are told the error)
        if self._loading.get(key) is loading:
            del self._loading[key]
            if not failed:
                self._items.put(key, loading.result())


class PlanCache:
    def __init__(
        self, state: StateManager, workflows: WorkflowStore, default_handles: Mapping[str, str], maxsize: int = 4096
    ) -> None:
        self._state = state
        self._workflows = workflows
        self._default_handles = default_handles
        self._plans: _Loaded[str, RunPlan] = _Loaded(maxsize)
        self._graphs: _Loaded[tuple[str, int], Graph] = _Loaded(256)
        self._test_graphs: _Lru[bytes, Graph] = _Lru(32)
        """Test runs' graphs by their definition's digest."""

    def build_graph(self, definition: Any) -> Graph:
        return Graph.from_json(definition, self._default_handles)

    def remember(self, plan: RunPlan) -> None:
        self._plans.put(plan.instance_id, plan)

    def forget(self, instance_id: str) -> None:
        """Read the run's plan afresh next time: a partial retry may move a failed run to another version."""
        self._plans.forget(instance_id)

    async def version_graph(self, workflow_id: str, version: int) -> Graph:
        async def load() -> Graph:
            definition = await self._workflows.definition(workflow_id, version)
            if definition is None:
                raise RunNotFoundError(f"workflow {workflow_id} has no version {version}")
            return self.build_graph(definition)

        return await self._graphs.get((workflow_id, version), load)

    def test_graph(self, definition: Any) -> Graph:
        """A test run's graph, shared with earlier test runs of the same definition."""
        digest = hashlib.blake2b(json_dumps(definition).encode(), digest_size=16).digest()
        graph = self._test_graphs.get(digest)
        if graph is None:
            graph = self.build_graph(definition)
            self._test_graphs.put(digest, graph)
        return graph

    async def _priority(self, instance_id: str) -> int:
        async with self._state.db.read(snapshot=False) as conn:
            return await run_priority(conn, instance_id, is_sqlite=self._state.db.is_sqlite)

    async def get(self, instance_id: str) -> RunPlan:
        return await self._plans.get(instance_id, functools.partial(self._load, instance_id))

    async def _load(self, instance_id: str) -> RunPlan:
        instance = await self._state.get_instance(instance_id)
        if instance is None:
            raise RunNotFoundError(f"run {instance_id} does not exist")
        pinned: Mapping[str, Any] = {}
        if instance.is_test:
            stored = await self._state.load_test_definition(instance_id)
            if stored is None:
                raise RunNotFoundError(f"test run {instance_id} has no stored definition")
            graph = self.test_graph(stored[DEFINITION_KEY])
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
        return RunPlan(
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
