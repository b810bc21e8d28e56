"""``wait``: the run stops here until someone outside resumes it (docs/waits.md, SPEC §2).

``resumeOn: "webhook"`` waits for ``POST /resume/{token}`` (output ``{body, receivedAt}``); ``"form"``
for a submission of the page ``/forms/{token}`` (output: the values, typed). ``timeoutSeconds``
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

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.domain.wait_forms import field_issues
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers, Park
from flowdeck.storage.waits import NewToken, WaitTokens, new_token, wait_url

__all__ = ("DEFAULT_WAIT_SECONDS", "MAX_WAIT_SETTING", "RESUME_KINDS", "WaitHandler")

DEFAULT_WAIT_SECONDS: Final = 7 * 24 * 3600.0
MAX_WAIT_SETTING: Final = "FLOWDECK_MAX_WAIT_SECONDS"
RESUME_KINDS: Final = ("webhook", "form")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class WaitHandler(NodeHandler):
    type_name = "wait"
    handles = ("success", "timeout")
    parks = True

    def __init__(self, tokens: WaitTokens, max_seconds: float) -> None:
        self._tokens = tokens
        self._max_seconds = max_seconds

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        issues: list[ConfigIssue] = []
        kind = config.get("resumeOn")
        if kind == "approval":
            issues.append(
                ConfigIssue("config.resumeOn", 'resumeOn "approval" is not available yet: use "webhook" or "form"')
            )
        elif kind not in RESUME_KINDS:
            issues.append(ConfigIssue("config.resumeOn", 'resumeOn must be "webhook" or "form"'))
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
        return issues

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        key = (helpers.instance_id, helpers.node_id, helpers.iteration)
        kind = str(config.get("resumeOn"))
        seconds = _number(config.get("timeoutSeconds")) or DEFAULT_WAIT_SECONDS
        state = await self._tokens.state(*key)
        if state is None:  # a wait in a loop body: its iteration's token is made when it gets here
            token = new_token()
            await self._tokens.create(helpers.instance_id, NewToken(helpers.node_id, helpers.iteration, kind, token))
            return HandlerResult(None, None, park=Park(seconds, {"resumeOn": kind, "url": wait_url(kind, token)}))
        if state.resumed:
            return HandlerResult(output=state.output, next_handle="success")
        if state.until is None or (not state.timed_out and self._tokens.clock() < state.until):
            urls = (context.get("run") or {}).get("resumeUrls") or {}
            return HandlerResult(None, None, park=Park(seconds, {"resumeOn": kind, "url": urls.get(helpers.node_id)}))
        if not state.timed_out and not await self._tokens.time_out(*key):
            resumed = await self._tokens.state(*key)  # a resume won the race
            if resumed is not None and resumed.resumed:
                return HandlerResult(output=resumed.output, next_handle="success")
        waited = f"node '{helpers.node_id}' waited {seconds:g} s (timeoutSeconds) and was not resumed"
        if "timeout" not in helpers.wired_handles:
            raise NodeError(waited, retryable=False, error_type="Timeout")
        return HandlerResult(output={"timedOut": True, "until": state.until}, next_handle="timeout")
