"""``workflow``: runs another saved workflow of the tenant as a child run and waits for it (SPEC §2).

The first execution of an attempt asks the engine for the call (``HandlerResult.call``): the engine
starts the child run in the same transaction that records the call, and parks the node (no worker
slot waits) until the child ends or the node's ``timeoutSeconds`` pass (engine/calls.py). The node's
job then runs again, and this handler finds the child it called: its output completes the node on
``success``; a failed or cancelled child fails the attempt (retries, error edges and ``errorHandling``
apply as for any node), with the child's ``instanceId`` in the error; a child still running means
the timeout passed: it is cancelled and the attempt fails with ``Timeout``.

An attempt that took over from a worker that stopped adopts the call of the attempt it replaced when
that attempt never ended, so a restart never starts a child twice.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.domain.statuses import RunStatus
from flowdeck.handlers.base import ChildCall, HandlerResult, NodeHandler, NodeHelpers
from flowdeck.storage.children import MAX_DEPTH, ChildRun, ChildRuns
from flowdeck.storage.workflows import WorkflowStore

__all__ = ("CancelRun", "WorkflowCallHandler")

CancelRun = Callable[[str, str], Awaitable[bool]]
"""Cancel a run with a reason; ``False`` when it had already finished."""

_WORKFLOW_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ARGUMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class WorkflowCallHandler(NodeHandler):
    type_name = "workflow"
    handles = ("success", "error")
    template_fields = ("input",)
    parks = True

    def __init__(self, workflows: WorkflowStore, children: ChildRuns, cancel: CancelRun) -> None:
        self._workflows = workflows
        self._children = children
        self._cancel = cancel

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        issues = []
        workflow_id = config.get("workflowId")
        if not isinstance(workflow_id, str) or not _WORKFLOW_ID.fullmatch(workflow_id):
            issues.append(ConfigIssue("config.workflowId", "workflowId must be the id of a saved workflow"))
        arguments = config.get("input", {})
        if not isinstance(arguments, dict):
            issues.append(ConfigIssue("config.input", "input must be an object of input names to values or templates"))
        else:
            issues += [
                ConfigIssue(f"config.input.{name}", "an input name is a letter or _ then letters, digits, _")
                for name in arguments
                if not isinstance(name, str) or not _ARGUMENT.fullmatch(name)
            ]
        version = config.get("version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
            issues.append(
                ConfigIssue("config.version", "version must be a saved version number (1 or more), or left out")
            )
        return issues

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        child = await self._children.latest_call(helpers.instance_id, helpers.node_id, helpers.iteration)
        if child is not None and (
            child.parent_attempt == helpers.attempt
            or not await self._children.attempt_ended(
                helpers.instance_id, helpers.node_id, helpers.iteration, child.parent_attempt
            )
        ):
            return await self._resume(child, helpers)
        return await self._call(config, helpers)

    async def _call(self, config: Mapping[str, Any], helpers: NodeHelpers) -> HandlerResult:
        workflow_id = config.get("workflowId")
        if not isinstance(workflow_id, str) or not _WORKFLOW_ID.fullmatch(workflow_id):
            raise NodeError(
                "config.workflowId must be the id of a saved workflow", retryable=False, error_type="ConfigError"
            )
        arguments = config.get("input", {})
        if not isinstance(arguments, dict):
            raise NodeError("config.input must be an object", retryable=False, error_type="ConfigError")
        latest = await self._workflows.latest_version(helpers.tenant_id, workflow_id)
        if latest is None:
            raise NodeError(
                f"workflow {workflow_id} does not exist (deleted, or never saved)",
                retryable=False,
                error_type="WorkflowNotFound",
            )
        version = config.get("version") or latest
        if not isinstance(version, int) or not 1 <= version <= latest:
            raise NodeError(
                f"workflow {workflow_id} has no version {version} (latest: {latest})",
                retryable=False,
                error_type="WorkflowNotFound",
            )
        definition = await self._workflows.definition(workflow_id, version)
        depth = helpers.depth + 1
        if depth > MAX_DEPTH:
            chain = [*await self._children.callers(helpers.instance_id), _title(definition, workflow_id)]
            raise NodeError(
                f"nesting depth {depth} is more than {MAX_DEPTH}: {' → '.join(chain)}",
                retryable=False,
                error_type="NestingTooDeep",
            )
        return HandlerResult(output=None, next_handle=None, call=ChildCall(workflow_id, version, arguments, definition))

    async def _resume(self, child: ChildRun, helpers: NodeHelpers) -> HandlerResult:
        if child.status not in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED):
            # Woken with the child unfinished: the node's timeoutSeconds passed since the call.
            reason = f"node '{helpers.node_id}' of run {helpers.instance_id}, which called it, timed out"
            await self._cancel(child.instance_id, reason)
            again = await self._children.latest_call(helpers.instance_id, helpers.node_id, helpers.iteration)
            if again is None or again.instance_id != child.instance_id or again.status is not RunStatus.COMPLETED:
                raise NodeError(
                    f"child run {child.instance_id} did not finish within {helpers.timeout_seconds:g} s (the node's"
                    " timeoutSeconds); it was cancelled",
                    error_type="Timeout",
                    details={"instanceId": child.instance_id},
                )
            child = again  # it finished just before the cancel
        if child.status is RunStatus.COMPLETED:
            return HandlerResult(output=child.output, next_handle="success")
        failed = child.status is RunStatus.FAILED
        raise NodeError(
            f"child run {child.instance_id} {'failed' if failed else 'was cancelled'}"
            + (f": {child.error}" if child.error else ""),
            retryable=failed and not await self._children.failed_for_good(child.instance_id),
            error_type="ChildRunFailed" if failed else "ChildRunCancelled",
            details={"instanceId": child.instance_id},
        )


def _title(definition: Any, workflow_id: str) -> str:
    title = definition.get("title") if isinstance(definition, dict) else None
    return str(title or workflow_id)
