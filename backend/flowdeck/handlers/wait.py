"""``wait``: the run stops here until someone outside resumes it (docs/waits.md, SPEC §2).

``resumeOn: "webhook"`` waits for ``POST /resume/{token}`` (output ``{body, receivedAt}``); ``"form"``
for a submission of the page ``/forms/{token}`` (output: the values, typed); ``"approval"`` for decisions
through ``/api/approvals`` (output ``{decision, decisions}``; a rejection takes ``rejected``, or fails the
node when nothing leaves that handle). ``timeoutSeconds``
(default 7 days, at most ``FLOWDECK_MAX_WAIT_SECONDS``) later the node completes on ``timeout``, or
fails when no edge leaves that handle.

The first execution asks the engine to park the node (``HandlerResult.park``): no worker slot waits.
A resume or the timeout makes its job due; this handler then runs again and reads the token's row
(storage/waits.py): resumed means ``success`` with the stored output; otherwise the timeout passed and
it claims the timeout with a conditional update, which a resume that got there first makes fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flowdeck.domain.approvals import approval_issues, misplaced_approval_keys
from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.domain.wait_forms import field_issues
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers, Park
from flowdeck.storage.approvals import ApprovalStore
from flowdeck.storage.waits import APPROVAL, APPROVAL_PATH, WaitState, WaitTokens, wait_token, wait_url

__all__ = ("DEFAULT_WAIT_SECONDS", "MAX_WAIT_SETTING", "RESUME_KINDS", "WaitHandler")

DEFAULT_WAIT_SECONDS: Final = 7 * 24 * 3600.0
MAX_WAIT_SETTING: Final = "FLOWDECK_MAX_WAIT_SECONDS"
RESUME_KINDS: Final = ("webhook", "form", APPROVAL)
REJECTED: Final = "rejected"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class WaitHandler(NodeHandler):
    type_name = "wait"
    handles = ("success", "timeout", REJECTED)
    parks = True

    def __init__(self, tokens: WaitTokens, approvals: ApprovalStore, max_seconds: float) -> None:
        self._tokens = tokens
        self._approvals = approvals
        self._max_seconds = max_seconds

    def output_handles(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return self.handles if config.get("resumeOn") == APPROVAL else ("success", "timeout")

    async def tenant_issues(self, tenant_id: str, config: Mapping[str, Any]) -> list[ConfigIssue]:
        if config.get("resumeOn") != APPROVAL:
            return []
        approvers = [str(e).strip().lower() for e in config.get("approvers") or []]
        unknown = await self._approvals.not_users(tenant_id, approvers)
        return [
            ConfigIssue(f"config.approvers[{i}]", f"approvers[{i}] ({email}) is not a user of this tenant")
            for i, email in enumerate(approvers)
            if email in unknown
        ]

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        issues: list[ConfigIssue] = []
        kind = config.get("resumeOn")
        if kind not in RESUME_KINDS:
            issues.append(ConfigIssue("config.resumeOn", 'resumeOn must be "webhook", "form" or "approval"'))
        if "timeoutSeconds" in config:
            seconds = _number(config["timeoutSeconds"])
            if seconds is None or not 0 < seconds <= self._max_seconds:
                issues.append(
                    ConfigIssue(
                        "config.timeoutSeconds",
                        f"timeoutSeconds must be a number above 0 and at most {self._max_seconds:g}"
                        f" ({MAX_WAIT_SETTING})",
                    )
                )
        if kind == "form":
            issues += field_issues(config.get("fields", []))
        elif "fields" in config:
            issues.append(ConfigIssue("config.fields", 'fields are for resumeOn "form" only'))
        issues += approval_issues(config) if kind == APPROVAL else misplaced_approval_keys(config)
        return issues

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        key = (helpers.instance_id, helpers.node_id, helpers.iteration)
        kind = str(config.get("resumeOn"))
        seconds = _number(config.get("timeoutSeconds")) or DEFAULT_WAIT_SECONDS
        state = await self._tokens.state(*key)
        if state is None:  # a wait in a loop body: its iteration's token is made when it gets here
            token = wait_token(helpers.node_id, helpers.iteration, config)
            await self._tokens.create(helpers.instance_id, helpers.tenant_id, token)
            shown = {"resumeOn": kind, "url": wait_url(token)}
            if token.approval is not None:
                shown["approvalId"] = token.approval_id
            return HandlerResult(None, None, park=Park(seconds, shown))
        if state.resumed:
            return self._resumed(state, helpers)
        if state.until is None and helpers.iteration and kind != APPROVAL:
            # An iteration's token whose maker stopped before parking (taken over): nobody has its URL.
            token = wait_token(helpers.node_id, helpers.iteration, config)
            if await self._tokens.replace_unshown(helpers.instance_id, helpers.tenant_id, token, helpers.attempt):
                return HandlerResult(None, None, park=Park(seconds, {"resumeOn": kind, "url": wait_url(token)}))
        if state.until is None or (not state.timed_out and self._tokens.clock() < state.until):
            return HandlerResult(None, None, park=Park(seconds, _waiting_for(kind, state, context, helpers.node_id)))
        if not state.timed_out and not await self._tokens.time_out(*key):
            resumed = await self._tokens.state(*key)  # a resume won the race
            if resumed is not None and resumed.resumed:
                return self._resumed(resumed, helpers)
        waited = f"node '{helpers.node_id}' waited {seconds:g} s (timeoutSeconds) and was not resumed"
        if "timeout" not in helpers.wired_handles:
            raise NodeError(waited, retryable=False, error_type="Timeout")
        return HandlerResult(output={"timedOut": True, "until": state.until}, next_handle="timeout")

    def _resumed(self, state: WaitState, helpers: NodeHelpers) -> HandlerResult:
        output = state.output
        if state.approval_id is None or not isinstance(output, dict) or output.get("decision") != "reject":
            return HandlerResult(output=output, next_handle="success")
        if REJECTED in helpers.wired_handles:
            return HandlerResult(output=output, next_handle=REJECTED)
        who = [d for d in output.get("decisions", []) if d.get("decision") == "reject"][-1:]
        said = f": {who[0]['comment']}" if who and who[0].get("comment") else ""
        by = f" by {who[0]['email']}" if who else ""
        raise NodeError(
            f"node '{helpers.node_id}' was rejected{by}{said}",
            retryable=False,
            error_type="Rejected",
            details={"decisions": output.get("decisions", [])},
        )


def _waiting_for(kind: str, state: WaitState, context: Mapping[str, Any], node_id: str) -> dict[str, Any]:
    """What a parked node shows: its URL (``ctx.run.resumeUrls`` for a top-level node), an approval's id."""
    if state.approval_id is not None:
        return {"resumeOn": kind, "url": APPROVAL_PATH + state.approval_id, "approvalId": state.approval_id}
    urls = (context.get("run") or {}).get("resumeUrls") or {}
    return {"resumeOn": kind, "url": urls.get(node_id)}
