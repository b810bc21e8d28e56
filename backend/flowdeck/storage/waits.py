"""The tokens of ``wait`` nodes (docs/waits.md): one per node and iteration of a run, kept as a sha256 hash.

The token is the whole authority of ``POST /resume/{token}`` and ``/forms/{token}``: 256 random bits
(``secrets.token_urlsafe(32)``). Only its hash is in ``wait_tokens``; the URL itself is in the run's own
log (``ctx.run.resumeUrls``, the node's ``waitingFor``), which only the run's tenant reads.

Who wins: a resume sets ``resumed_at`` and a timeout ``timed_out_at``, each with one conditional UPDATE
that requires both still NULL (and, for a resume, the run still running and the token not past
``until``). On PostgreSQL the row lock makes the second writer re-check the WHERE once the first
committed; SQLite has one writer. So exactly one of any number of resumes and timeouts wins, in any
process. The parked node's job is woken in the resume's transaction (``wake_parent``: the same wake a
child run's end gives its caller); the node's next execution reads the stored output.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import sqlalchemy as sa

from flowdeck.domain.approvals import ApprovalRule, rule_of
from flowdeck.domain.statuses import EventType, RunStatus
from flowdeck.storage.approval_tables import approvals
from flowdeck.storage.children import wake_parent
from flowdeck.storage.database import Connection, Database
from flowdeck.storage.disconnects import own_mark
from flowdeck.storage.tables import instance_logs, instances, node_jobs, tenants, wait_tokens

__all__ = (
    "APPROVAL",
    "APPROVAL_PATH",
    "FORM_PATH",
    "RESUME_PATH",
    "RUN_KEY",
    "WAIT_KEY",
    "NewToken",
    "ResumeAnswer",
    "TokenInfo",
    "WaitState",
    "WaitTokens",
    "hash_token",
    "insert_tokens",
    "mark_parked",
    "new_token",
    "wait_token",
    "wait_url",
)

WAIT_KEY: Final = "__wait"
"""The output variable of the SYSTEM_SET row a parked ``wait`` node writes (its ``waitingFor``; never in a context)."""
RUN_KEY: Final = "__run"
"""The output variable of the SYSTEM_SET row holding ``ctx.run`` (``resumeUrls``), written when the run opens."""
RESUME_PATH: Final = "/resume/"
FORM_PATH: Final = "/forms/"
APPROVAL: Final = "approval"
APPROVAL_PATH: Final = "/approvals/"
"""The editor's page of one approval (a login decides it: the approval's id is no credential)."""
_LIVE = [RunStatus.RUNNING.value, RunStatus.PENDING.value]
_REVOKED = [RunStatus.CANCELLED.value, RunStatus.FAILED.value]


def new_token() -> str:
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def wait_url(token: NewToken) -> str:
    """The path a caller uses: the form page for a form, ``/resume/{token}`` for a webhook, the editor's
    page of the approval for an approval."""
    if token.approval is not None:
        return APPROVAL_PATH + token.approval_id
    return (FORM_PATH if token.resume_on == "form" else RESUME_PATH) + token.token


@dataclass(frozen=True, slots=True)
class NewToken:
    node_id: str
    iteration: str
    resume_on: str
    token: str
    approval: ApprovalRule | None = None
    """An approval wait's rule: its ``approvals`` row is written with the token."""
    approval_id: str = ""


@dataclass(frozen=True, slots=True)
class WaitState:
    until: float | None
    resumed: bool
    timed_out: bool
    output: Any
    approval_id: str | None = None


@dataclass(frozen=True, slots=True)
class TokenInfo:
    instance_id: str
    node_id: str
    iteration: str
    resume_on: str
    tenant_name: str
    usable: bool
    """Not resumed, not timed out, not past ``until``, and its run still running."""


ResumeAnswer = Literal["resumed", "used", "unknown"]


async def insert_tokens(
    conn: Connection, instance_id: str, tenant_id: str, tokens: Iterable[NewToken], now: float
) -> None:
    tokens = list(tokens)
    rows = [
        {
            "token_hash": hash_token(t.token),
            "instance_id": instance_id,
            "node_id": t.node_id,
            "iteration": t.iteration,
            "resume_on": t.resume_on,
            "created_at": now,
        }
        for t in tokens
    ]
    if rows:
        await conn.execute(wait_tokens.insert(), rows)
    rules = [
        {
            "id": t.approval_id,
            "tenant_id": tenant_id,
            "instance_id": instance_id,
            "node_id": t.node_id,
            "iteration": t.iteration,
            "approvers": list(t.approval.approvers),
            "required": t.approval.required,
            "allow_self": t.approval.allow_self,
            "created_at": now,
        }
        for t in tokens
        if t.approval is not None
    ]
    if rules:
        await conn.execute(approvals.insert(), rules)


async def mark_parked(
    conn: Connection, instance_id: str, node_id: str, iteration: str, until: float
) -> tuple[bool, float] | None:
    """In the parking decision: fix the token's ``until`` (the first park's); returns whether it was resumed
    already and the ``until`` that holds (``None``: no token). The UPDATE locks the row, so a resume racing
    the park either committed before (seen here: the node is made due at once) or waits and then finds the
    job parked, to wake."""
    c = wait_tokens.c
    row = (
        await conn.execute(
            wait_tokens.update()
            .where(c.instance_id == instance_id, c.node_id == node_id, c.iteration == iteration)
            .values(until=sa.func.coalesce(c.until, until))
            .returning(c.resumed_at, c.timed_out_at, c.until)
        )
    ).first()
    if row is None:
        return None
    return row[0] is not None or row[1] is not None, float(row[2])


async def shown_wait(conn: Connection, instance_id: str, node_id: str, iteration: str) -> dict[str, Any] | None:
    """What the node's latest park showed (its SYSTEM_SET ``waitingFor``), if it parked before."""
    c = instance_logs.c
    payload = (
        await conn.execute(
            sa.select(c.payload)
            .where(
                c.instance_id == instance_id,
                c.node_id == node_id,
                c.iteration == iteration,
                c.event_type == EventType.SYSTEM_SET.value,
                c.output_variable == WAIT_KEY,
            )
            .order_by(c.log_id.desc())
            .limit(1)
        )
    ).scalar()
    shown = payload.get(WAIT_KEY) if isinstance(payload, dict) else None
    return shown if isinstance(shown, dict) else None


def wait_token(node_id: str, iteration: str, config: Mapping[str, Any]) -> NewToken:
    """A new token for a wait node of ``config`` (an approval's carries its rule and id)."""
    kind = str(config.get("resumeOn"))
    if kind != APPROVAL:
        return NewToken(node_id, iteration, kind, new_token())
    return NewToken(node_id, iteration, kind, new_token(), rule_of(config), str(uuid.uuid4()))


class WaitTokens:
    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self.db = db
        self.clock = clock

    async def state(self, instance_id: str, node_id: str, iteration: str) -> WaitState | None:
        c, a = wait_tokens.c, approvals.c
        joined = wait_tokens.outerjoin(
            approvals, sa.and_(a.instance_id == c.instance_id, a.node_id == c.node_id, a.iteration == c.iteration)
        )
        stmt = (
            sa.select(c.until, c.resumed_at, c.timed_out_at, c.output, a.id)
            .select_from(joined)
            .where(c.instance_id == instance_id, c.node_id == node_id, c.iteration == iteration)
        )
        async with self.db.read(snapshot=False) as conn:
            row = (await conn.execute(stmt)).first()
        if row is None:
            return None
        return WaitState(row[0], row[1] is not None, row[2] is not None, row[3], row[4])

    async def create(self, instance_id: str, tenant_id: str, token: NewToken) -> None:
        """A token made when the node first runs (a node in a loop body: one per iteration)."""
        async with self.db.transaction() as conn:
            await insert_tokens(conn, instance_id, tenant_id, [token], self.clock())

    async def replace_unshown(self, instance_id: str, tenant_id: str, token: NewToken, attempt: int) -> bool:
        """Replace an iteration's token no park has shown (``until`` unset: the attempt that made it stopped
        before parking, so its secret is nowhere), if the node's job is still at ``attempt``; ``False`` when
        a later attempt holds the node, or the token was shown, resumed or timed out meanwhile."""
        c, j = wait_tokens.c, node_jobs.c
        held = sa.exists().where(
            j.instance_id == instance_id,
            j.node_id == token.node_id,
            j.iteration == token.iteration,
            j.attempt == attempt,
        )
        async with self.db.transaction() as conn:
            result = await conn.execute(
                wait_tokens.delete().where(
                    c.instance_id == instance_id,
                    c.node_id == token.node_id,
                    c.iteration == token.iteration,
                    c.until.is_(None),
                    c.resumed_at.is_(None),
                    c.timed_out_at.is_(None),
                    held,
                )
            )
            if result.rowcount != 1:
                return False
            await insert_tokens(conn, instance_id, tenant_id, [token], self.clock())
            return True

    async def time_out(self, instance_id: str, node_id: str, iteration: str) -> bool:
        """Claim the timeout: ``False`` when a resume won first."""
        c = wait_tokens.c
        async with self.db.transaction() as conn:
            result = await conn.execute(
                wait_tokens.update()
                .where(
                    c.instance_id == instance_id,
                    c.node_id == node_id,
                    c.iteration == iteration,
                    c.resumed_at.is_(None),
                    c.timed_out_at.is_(None),
                )
                .values(timed_out_at=self.clock())
            )
            return bool(result.rowcount == 1)

    async def lookup(self, token: str) -> TokenInfo | None:
        c, now = wait_tokens.c, self.clock()
        stmt = (
            sa.select(
                c.instance_id,
                c.node_id,
                c.iteration,
                c.resume_on,
                tenants.c.name,
                c.resumed_at,
                c.timed_out_at,
                c.until,
                instances.c.status,
            )
            .select_from(
                wait_tokens.join(instances, instances.c.id == c.instance_id).join(
                    tenants, tenants.c.id == instances.c.tenant_id
                )
            )
            .where(c.token_hash == hash_token(token))
        )
        async with self.db.read(snapshot=False) as conn:
            row = (await conn.execute(stmt)).first()
        if row is None:
            return None
        usable = row[5] is None and row[6] is None and (row[7] is None or row[7] > now) and row[8] in _LIVE
        return TokenInfo(row[0], row[1], row[2], row[3], row[4], usable)

    async def resume(self, token: str, output: Any) -> tuple[ResumeAnswer, TokenInfo | None]:
        """Resume the node of ``token`` with ``output``: ``resumed`` once, ``used`` for any later call while
        the run goes on, ``unknown`` for a token that never was, timed out, or whose run ended."""
        c, now, digest = wait_tokens.c, self.clock(), hash_token(token)
        running = sa.exists().where(instances.c.id == c.instance_id, instances.c.status.in_(_LIVE))
        mark = own_mark()  # an API request knows its own resume if it runs again (api/replay.py)
        async with self.db.transaction() as conn:
            row = (
                await conn.execute(
                    wait_tokens.update()
                    .where(
                        c.token_hash == digest,
                        c.resumed_at.is_(None),
                        c.timed_out_at.is_(None),
                        sa.or_(c.until.is_(None), c.until > now),
                        running,
                    )
                    .values(resumed_at=now, resumed_by=mark, output=output)
                    .returning(c.instance_id, c.node_id, c.iteration)
                )
            ).first()
            if row is not None:
                await wake_parent(conn, (row[0], row[1], row[2]), now)
                return "resumed", TokenInfo(row[0], row[1], row[2], "", "", False)
            if mark is not None:  # this request's first run resumed it, and lost the answer to its COMMIT
                own = sa.select(c.instance_id, c.node_id, c.iteration).where(
                    c.token_hash == digest, c.resumed_by == mark
                )
                row = (await conn.execute(own)).first()
                if row is not None:
                    return "resumed", TokenInfo(row[0], row[1], row[2], "", "", False)
        info = await self.lookup(token)
        if info is None or not await self.was_used(token):
            return "unknown", None
        return "used", info

    async def was_used(self, token: str) -> bool:
        """Resumed already, and its run not cancelled or failed since (those revoke the token)."""
        c = wait_tokens.c
        stmt = (
            sa.select(c.resumed_at)
            .select_from(wait_tokens.join(instances, instances.c.id == c.instance_id))
            .where(c.token_hash == hash_token(token), c.resumed_at.is_not(None), instances.c.status.not_in(_REVOKED))
        )
        async with self.db.read(snapshot=False) as conn:
            return (await conn.execute(stmt)).first() is not None
