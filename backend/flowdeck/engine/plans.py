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

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flowdeck.domain.flow_control import DEFAULT_PRIORITY
from flowdeck.domain.graph import Graph
from flowdeck.engine.loaded_once import LoadedOnce, Lru
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


class PlanCache:
    def __init__(
        self, state: StateManager, workflows: WorkflowStore, default_handles: Mapping[str, str], maxsize: int = 4096
    ) -> None:
        self._state = state
        self._workflows = workflows
        self._default_handles = default_handles
        self._plans: LoadedOnce[str, RunPlan] = LoadedOnce(maxsize)
        self._graphs: LoadedOnce[tuple[str, int], Graph] = LoadedOnce(256)
        self._test_graphs: Lru[bytes, Graph] = Lru(32)
        """Test runs' graphs by their definition's digest."""

    def build_graph(self, definition: Any) -> Graph:
        return Graph.from_json(definition, self._default_handles)

    def remember(self, plan: RunPlan) -> None:
        self._plans.put(plan.instance_id, plan)

    def may_hold_slot(self, instance_id: str) -> bool:
        """Whether the run may hold a slot of ``options.concurrency`` (its version has the option, or its plan
        is not known here): only such a run's end can free one for a run waiting its turn."""
        plan = self._plans.known(instance_id)
        return plan is None or plan.graph.definition.options.concurrency is not None

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

    async def get(self, instance_id: str, *, priority: int | None = None) -> RunPlan:
        """The run's plan, loaded the first time. ``priority``: the run's, when the caller holds one of its jobs
        (a job carries the priority its run was started with, which never changes): one read fewer."""
        return await self._plans.get(instance_id, functools.partial(self._load, instance_id, priority))

    async def _load(self, instance_id: str, priority: int | None) -> RunPlan:
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
            priority if priority is not None else await self._priority(instance_id),
        )
