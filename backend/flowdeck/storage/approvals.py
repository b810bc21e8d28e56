"""Approvals (docs/waits.md "Approvals"): the pending ones a tenant's users may decide, and a decision.

A decision is one transaction that first locks the run's row (a cancel racing it waits, or was first and
is seen), then the node's ``wait_tokens`` row with a conditional UPDATE (still unresolved, parked, not past
``until``): a timeout or another decision of the same approval waits for it, or finds it resolved. Then it
checks who decides (domain/approvals.py), records the decision and, when it resolves the approval, sets the row's
``resumed_at`` and output and wakes the parked node, as ``POST /resume/{token}`` does (storage/waits.py).
So a decision and a timeout at the same instant, in any processes, leave exactly one winner, and with
``required: 2`` two concurrent approvals are counted one after the other (the second sees the first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlalchemy as sa

from flowdeck.domain.approvals import ApprovalRule, Decision, Refusal, outcome, refusal
from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.account_tables import users
from flowdeck.storage.approval_tables import approval_decisions, approvals
from flowdeck.storage.children import wake_parent
from flowdeck.storage.database import Connection, Database
from flowdeck.storage.disconnects import own_mark
from flowdeck.storage.tables import instances, node_jobs, wait_tokens, workflows

__all__ = ("ApprovalRow", "ApprovalStore", "Decider", "DecisionAnswer", "shown_decisions")

_LIVE = [RunStatus.RUNNING.value]

_RUN_STATUS = sa.func.coalesce(instances.c.status, "")
"""The run's status in the list's filter, as an expression no index serves: the run is then reached by its
primary key from each approval, never by a scan of the status index (which PostgreSQL picked, quadratic,
when its statistics were missing or stale)."""

DecisionAnswer = Literal["resolved", "counted", "closed"]
"""``resolved``: this decision approved or rejected it; ``counted``: it still waits for more approvals;
``closed``: it was resolved, timed out or its run ended before this decision."""


@dataclass(frozen=True, slots=True)
class Decider:
    user_id: str
    email: str


@dataclass(slots=True)
class ApprovalRow:
    id: str
    instance_id: str
    workflow_id: str | None
    workflow_title: str | None
    node_id: str
    iteration: str
    is_test: bool
    requested_by: str | None
    """The user id of who started the run."""
    requested_by_email: str | None
    until: float | None
    pending: bool
    rule: ApprovalRule
    created_at: float
    resolution: Decision | None
    """How it was resolved (``None``: pending, timed out, or its run ended first)."""
    decisions: list[dict[str, Any]] = field(default_factory=list)
    """``[{email, decision, comment, at}]`` so far, in order (with ``userId``, which never leaves the API)."""

    def refusal(self, decider: Decider) -> Refusal | None:
        decided = [d["userId"] for d in self.decisions]
        return refusal(
            self.rule,
            user_id=decider.user_id,
            email=decider.email,
            requested_by=self.requested_by,
            is_test=self.is_test,
            decided_by=decided,
        )


def _columns(now: float) -> tuple[Any, ...]:
    a, w, i = approvals.c, wait_tokens.c, instances.c
    pending = sa.and_(
        w.resumed_at.is_(None),
        w.timed_out_at.is_(None),
        w.until.is_not(None),
        w.until > now,
        i.status.in_(_LIVE),
    )
    return (
        a.id,
        a.instance_id,
        i.workflow_id,
        workflows.c.title,
        a.node_id,
        a.iteration,
        i.is_test,
        i.requested_by,
        users.c.email,
        w.until,
        sa.case((pending, sa.true()), else_=sa.false()).label("pending"),
        a.approvers,
        a.required,
        a.allow_self,
        a.created_at,
        w.resumed_at,
        w.output,
    )


_JOINED = (
    approvals.join(
        wait_tokens,
        sa.and_(
            wait_tokens.c.instance_id == approvals.c.instance_id,
            wait_tokens.c.node_id == approvals.c.node_id,
            wait_tokens.c.iteration == approvals.c.iteration,
        ),
    )
    .join(instances, instances.c.id == approvals.c.instance_id)
    .outerjoin(users, users.c.id == instances.c.requested_by)
    .outerjoin(workflows, workflows.c.id == instances.c.workflow_id)
)


def _row(row: Any) -> ApprovalRow:
    m = row._mapping
    rule = ApprovalRule(tuple(m["approvers"] or ()), int(m["required"]), bool(m["allow_self"]))
    return ApprovalRow(
        m["id"],
        m["instance_id"],
        m["workflow_id"],
        m["title"],
        m["node_id"],
        m["iteration"],
        bool(m["is_test"]),
        m["requested_by"],
        m["email"],
        m["until"],
        bool(m["pending"]),
        rule,
        m["created_at"],
        _resolution(m["resumed_at"], m["output"]),
    )


def _resolution(resumed_at: float | None, output: Any) -> Decision | None:
    if resumed_at is None or not isinstance(output, dict):
        return None
    return "reject" if output.get("decision") == "reject" else "approve"


async def _decisions(conn: Connection, ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    d = approval_decisions.c
    found: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
    if not ids:
        return found
    stmt = (
        sa.select(d.approval_id, d.user_id, d.email, d.decision, d.comment, d.decided_at)
        .where(d.approval_id.in_(list(ids)))
        .order_by(d.decided_at, d.user_id)
    )
    for row in await conn.execute(stmt):
        found[row[0]].append({"userId": row[1], "email": row[2], "decision": row[3], "comment": row[4], "at": row[5]})
    return found


def shown_decisions(decisions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The decisions as the node's output and the API show them (without user ids)."""
    return [{k: v for k, v in d.items() if k != "userId"} for d in decisions]


class ApprovalStore:
    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self.db = db
        self.clock = clock

    async def pending(self, tenant_id: str, after: tuple[float, str] | None, limit: int) -> list[ApprovalRow]:
        """The tenant's approvals that wait for a decision (their node parked, the run running), oldest first,
        from the one after ``after`` (``(created_at, id)`` of the last one seen)."""
        now = self.clock()
        a, w = approvals.c, wait_tokens.c
        stmt = (
            sa.select(*_columns(now))
            .select_from(_JOINED)
            .where(
                a.tenant_id == tenant_id,
                w.resumed_at.is_(None),
                w.timed_out_at.is_(None),
                w.until.is_not(None),
                w.until > now,
                _RUN_STATUS.in_(_LIVE),
                sa.true() if after is None else sa.tuple_(a.created_at, a.id) > sa.tuple_(*after),
            )
            .order_by(a.created_at, a.id)
            .limit(limit)
        )
        async with self.db.read(snapshot=False) as conn:
            rows = [_row(r) for r in await conn.execute(stmt)]
            decided = await _decisions(conn, [r.id for r in rows])
        for row in rows:
            row.decisions = decided[row.id]
        return rows

    async def parked_attempt(self, row: ApprovalRow) -> int | None:
        """The attempt of the parked job waiting for the approval (``None``: its job is gone, the run ended)."""
        c = node_jobs.c
        where = (c.instance_id == row.instance_id, c.node_id == row.node_id, c.iteration == row.iteration)
        async with self.db.read() as conn:
            attempt = (await conn.execute(sa.select(c.attempt).where(*where))).scalar_one_or_none()
        return None if attempt is None else int(attempt)

    async def of_run(self, tenant_id: str, instance_id: str, approval_ids: Sequence[str]) -> list[ApprovalRow]:
        """Those of the approvals of one run of the tenant, with their decisions (what a run's page shows)."""
        if not approval_ids:
            return []
        a = approvals.c
        where = (a.id.in_(list(approval_ids)), a.instance_id == instance_id, a.tenant_id == tenant_id)
        stmt = sa.select(*_columns(self.clock())).select_from(_JOINED).where(*where)
        async with self.db.read(snapshot=False) as conn:
            rows = [_row(found) for found in await conn.execute(stmt)]
            decisions = await _decisions(conn, [row.id for row in rows])
        for row in rows:
            row.decisions = decisions[row.id]
        return rows

    async def get(self, tenant_id: str, approval_id: str) -> ApprovalRow | None:
        """One approval of the tenant, pending or not (``None``: unknown, or another tenant's)."""
        stmt = (
            sa.select(*_columns(self.clock()))
            .select_from(_JOINED)
            .where(approvals.c.id == approval_id, approvals.c.tenant_id == tenant_id)
        )
        async with self.db.read(snapshot=False) as conn:
            found = (await conn.execute(stmt)).first()
            if found is None:
                return None
            row = _row(found)
            row.decisions = (await _decisions(conn, [row.id]))[row.id]
        return row

    async def decide(
        self, row: ApprovalRow, decider: Decider, decision: Decision, comment: str | None
    ) -> tuple[DecisionAnswer | Refusal, ApprovalRow]:
        """Record ``decider``'s decision on the approval ``row`` (read before, by ``get``); the answer, and
        the row as it is after it (its decisions re-read inside the decision's transaction)."""
        now = self.clock()
        w = wait_tokens.c
        key = (w.instance_id == row.instance_id, w.node_id == row.node_id, w.iteration == row.iteration)
        live = sa.exists().where(instances.c.id == w.instance_id, instances.c.status.in_(_LIVE))
        mark = own_mark()  # an API request knows its own decision if it runs again (api/replay.py)
        if mark is not None and await self._decided_with(row, decider, mark):
            return await self._as_decided(row)
        async with self.db.transaction() as conn:
            # The run's row first (the order the engine's decisions take): a cancel committed before is
            # seen here, and one racing this decision waits for it and comes after.
            run_status = await conn.execute(
                sa.select(instances.c.status).where(instances.c.id == row.instance_id).with_for_update()
            )
            if run_status.scalar_one_or_none() not in _LIVE:
                return "closed", row
            locked = await conn.execute(
                wait_tokens.update()
                .where(
                    *key,
                    w.resumed_at.is_(None),
                    w.timed_out_at.is_(None),
                    w.until.is_not(None),
                    w.until > now,
                    live,
                )
                .values(until=w.until)
            )
            if locked.rowcount != 1:
                return "closed", row
            row.decisions = (await _decisions(conn, [row.id]))[row.id]
            refused = row.refusal(decider)
            if refused is not None:
                return refused, row
            entry = {"userId": decider.user_id, "email": decider.email, "decision": decision, "comment": comment}
            await conn.execute(
                approval_decisions.insert().values(
                    approval_id=row.id,
                    user_id=decider.user_id,
                    instance_id=row.instance_id,
                    email=decider.email,
                    decision=decision,
                    comment=comment,
                    decided_at=now,
                    request_mark=mark,
                )
            )
            row.decisions.append({**entry, "at": now})
            sole = row.is_test and row.requested_by == decider.user_id
            resolved = outcome([d["decision"] for d in row.decisions], row.rule.required, sole=sole)
            if resolved is None:
                return "counted", row
            output = {"decision": resolved, "decisions": shown_decisions(row.decisions)}
            await conn.execute(wait_tokens.update().where(*key).values(resumed_at=now, output=output))
            await wake_parent(conn, (row.instance_id, row.node_id, row.iteration), now)
            row.pending, row.resolution = False, resolved
            return "resolved", row

    async def _decided_with(self, row: ApprovalRow, decider: Decider, mark: str) -> bool:
        """This request decided already: its first run committed and lost the answer (api/replay.py)."""
        d = approval_decisions.c
        stmt = sa.select(d.decided_at).where(
            d.approval_id == row.id, d.user_id == decider.user_id, d.request_mark == mark
        )
        async with self.db.read(snapshot=False) as conn:
            return (await conn.execute(stmt)).first() is not None

    async def _as_decided(self, row: ApprovalRow) -> tuple[DecisionAnswer, ApprovalRow]:
        """The answer the first run gave: the approval as that decision left it (it may have resolved it)."""
        stmt = sa.select(*_columns(self.clock())).select_from(_JOINED).where(approvals.c.id == row.id)
        async with self.db.read(snapshot=False) as conn:
            fresh = _row((await conn.execute(stmt)).one())
            fresh.decisions = (await _decisions(conn, [fresh.id]))[fresh.id]
        return ("resolved" if fresh.resolution is not None else "counted"), fresh

    async def not_users(self, tenant_id: str, emails: Sequence[str]) -> set[str]:
        """Of ``emails`` (lower-cased), the ones that are not an enabled user of the tenant."""
        if not emails:
            return set()
        stmt = sa.select(users.c.email).where(
            users.c.tenant_id == tenant_id, users.c.email.in_(list(emails)), users.c.disabled_at.is_(None)
        )
        async with self.db.read(snapshot=False) as conn:
            found = {str(r[0]).lower() for r in await conn.execute(stmt)}
        return set(emails) - found
