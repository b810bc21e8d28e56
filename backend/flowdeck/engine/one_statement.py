"""The common decisions offered to the store as one statement each: a chain's step, the node ending
a loop iteration, a top-level end.

Which results qualify is decided here; the store takes the step where it can (PostgreSQL in one
statement: storage/state_postgres.py; SQLite a chain's step in a few, without the general decision's
Python: storage/state_sqlite.py) and returns ``None`` where it cannot (the portable store, or a step
SQLite does not take), and then the general decision (engine/decision.py) takes it. Either way the same
rows are written (tests/integration/test_one_statement_equivalence.py).
"""

from __future__ import annotations

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.cas import Cas
from flowdeck.engine.decision import Decision
from flowdeck.engine.effects import Effects, job_key
from flowdeck.engine.outcomes import Completed, completed_payload
from flowdeck.engine.plans import RunPlan
from flowdeck.engine.run_budget import charge_of
from flowdeck.engine.scheduling import loop_entry, sole_successor
from flowdeck.handlers.loop import loop_concurrency
from flowdeck.storage.records import Job
from flowdeck.storage.state import StateTransaction
from flowdeck.storage.steps import ChainStep, ChainStepInput, EndStepInput, IterationStepInput

__all__ = ("OneStatementSteps",)


class OneStatementSteps:
    def __init__(self, cas: Cas, lease_seconds: float, max_run_bytes: int) -> None:
        self.cas = cas
        self.state = cas.state
        self.lease_seconds = lease_seconds
        self.max_run_bytes = max_run_bytes
        """A step that would take the run past it writes nothing: the general decision fails the node."""

    async def try_steps(
        self, plan: RunPlan, job: Job, outcome: Completed, owner: str | None, early_release: bool = False
    ) -> tuple[bool, Job | None]:
        """Offer the result to the store as one of the one-statement steps; (taken, the job leased to
        ``owner``). Not taken: nothing was written, the general decision takes it (labels need it too).
        The chain and iteration steps commit asynchronously (storage/pg_durability.py): their effects are
        announced once they are durable, and without ``early_release`` this returns only then."""
        if not self.state.takes_steps:
            return False, None  # the portable store takes no step
        if outcome.labels:
            return False, None
        charge = charge_of(plan.graph, job.node_id, outcome)
        if owner is not None:
            taken, follow = await self._chain_step(plan, job, outcome, charge, owner)
            if not taken:
                taken, follow = await self._iteration_step(plan, job, outcome, charge, owner)
            if taken:
                if not early_release:
                    await self.state.settle()
                return True, follow
        return await self._end_step(plan, job, outcome, charge), None

    async def _chain_step(
        self, plan: RunPlan, job: Job, outcome: Completed, charge: int, owner: str
    ) -> tuple[bool, Job | None]:
        """A chain's step (one successor, nothing else decided): the same rows as the general decision, in
        one round trip instead of five.

        Returns (taken, the successor's job): not taken when this is not one, or nothing was written
        (the general path then decides, reading the instance version afresh).
        """
        versions = self.cas.versions
        known = versions.get(job.instance_id)
        if known is None or outcome.iterations is not None or outcome.queue_delay:
            return False, None
        graph = plan.graph
        successor = sole_successor(graph, job.node_id, outcome.handle) if outcome.handle else None
        if successor is None or successor in plan.pinned:
            return False, None
        variable = graph.node(job.node_id).variable
        payload = completed_payload(outcome)
        step = await self.state.chain_step(
            ChainStepInput(
                job, known, variable, payload, charge, self.max_run_bytes, successor, owner, self.lease_seconds
            )
        )
        if step is None:
            return False, None  # the store takes no chain steps in one statement
        if step.status is None:
            versions.forget(job.instance_id)
            return False, None
        versions.remember(job.instance_id, known + 1)
        if not step.logged:
            return True, None  # a duplicate delivered concurrently: recorded by the other, nothing to do
        self._announce_step(step, job, outcome)
        if step.next_job is None and step.job_removed and step.status is RunStatus.RUNNING:
            # The successor had been dispatched before (its guard row exists): what is left of the
            # general decision is to see whether that finished the scope or the run.
            loop_id = graph.loop_of(job.node_id)

            async def settle(tx: StateTransaction, status: RunStatus, effects: Effects) -> None:
                if status is RunStatus.RUNNING:
                    budget = self.max_run_bytes
                    decision = Decision(
                        tx, plan, effects, owner=None, lease_seconds=self.lease_seconds, max_run_bytes=budget
                    )
                    await decision.settle(job.iteration, loop_id)

            await self.cas.decide_now(job.instance_id, settle)
        return True, step.next_job

    async def _iteration_step(
        self, plan: RunPlan, job: Job, outcome: Completed, charge: int, owner: str
    ) -> tuple[bool, Job | None]:
        """The node that ends a loop iteration: one more finished iteration and the next item started,
        as the general decision writes them. Not taken (nothing written) when this is not one or the
        loop finishes with it."""
        versions = self.cas.versions
        known = versions.get(job.instance_id)
        graph = plan.graph
        loop_id = graph.loop_of(job.node_id)
        if known is None or loop_id is None or not job.iteration:
            return False, None
        if outcome.iterations is not None or outcome.queue_delay or graph.edges_from(job.node_id):
            return False, None
        entry = loop_entry(graph, loop_id)
        if entry is None or entry in plan.pinned:
            return False, None
        step = await self.state.iteration_step(
            IterationStepInput(
                job,
                known,
                graph.node(job.node_id).variable,
                completed_payload(outcome),
                charge,
                self.max_run_bytes,
                loop_id,
                tuple(graph.bodies[loop_id]),
                entry,
                loop_concurrency(graph.node(loop_id).config),
                owner,
                self.lease_seconds,
            )
        )
        if step is None:
            return False, None  # the store takes no iteration steps in one statement
        if step.status is None:
            versions.forget(job.instance_id)
            return False, None
        versions.remember(job.instance_id, known + 1)
        self._announce_step(step, job, outcome)
        return True, step.next_job

    async def _end_step(self, plan: RunPlan, job: Job, outcome: Completed, charge: int) -> bool:
        """A top-level end node's result: the same rows as the general decision. ``False``: not one, or
        nothing was written."""
        versions = self.cas.versions
        known = versions.get(job.instance_id)
        if known is None or job.iteration or plan.parent is not None:
            return False  # a child run's end also wakes its caller: the general decision does that
        node = plan.graph.node(job.node_id)
        if node.type != "end" or outcome.iterations is not None or plan.graph.edges_from(job.node_id):
            return False
        payload = completed_payload(outcome, end=True)
        step = await self.state.end_step(
            EndStepInput(job, known, node.variable, payload, charge, self.max_run_bytes, outcome.output)
        )
        if step is None:
            return False  # the store takes no end steps in one statement
        if step.status is None:
            versions.forget(job.instance_id)
            return False
        versions.remember(job.instance_id, known + 1)
        effects = Effects(step.now)
        if step.logged and step.job_removed:  # a late result of a replaced attempt is recorded, shown nowhere
            effects.node(job_key(job), NodeStatus.COMPLETED, job.attempt, output=outcome.output)
        if step.run_completed:
            effects.run(job.instance_id, RunStatus.COMPLETED, output=step.output)
        self.cas.announce(effects)
        return True

    def _announce_step(self, step: ChainStep, job: Job, outcome: Completed) -> None:
        """What a one-statement step wrote: the node completed, and the next job dispatched and started."""
        effects = Effects(step.now)
        if step.logged and step.job_removed:  # a late result of a replaced attempt is recorded, shown nowhere
            effects.node(job_key(job), NodeStatus.COMPLETED, job.attempt, output=outcome.output)
        if step.next_job is not None:
            effects.jobs_added += 1
            effects.node(job_key(step.next_job), NodeStatus.DISPATCHED, step.next_job.attempt)
            effects.node(job_key(step.next_job), NodeStatus.RUNNING, step.next_job.attempt)
        self.cas.announce_once_durable(step.committed, job.instance_id, effects)
