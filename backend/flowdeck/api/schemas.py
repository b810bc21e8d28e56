"""Request and response bodies (msgspec Structs, camelCase on the wire). Nothing else crosses the API boundary.

Times are Unix epoch seconds (fractional), as everywhere in Flowdeck (the log, Socket.IO ``at``).
Workflow definitions keep ``nodes``, ``edges`` and ``options`` as loose JSON here: the engine's
validator checks them and reports every problem at once, naming the node or edge at fault.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from flowdeck.domain.problems import Problem
from flowdeck.domain.retention import MAX_DAYS, MAX_RUNS
from flowdeck.domain.statuses import NodeStatus, RunStatus

__all__ = (
    "DefinitionFields",
    "EventOut",
    "EventPage",
    "HealthOut",
    "HookFinished",
    "HookPending",
    "LoginRequest",
    "NodeStateOut",
    "PasswordChange",
    "Problem",
    "RetentionIn",
    "RetentionOut",
    "RetryRun",
    "RunAccepted",
    "RunActionOut",
    "RunDetail",
    "RunPage",
    "RunSummary",
    "SessionOut",
    "StartRun",
    "StartTestRun",
    "TimelinePage",
    "TimelineRowOut",
    "TokenCreate",
    "TokenCreated",
    "TokenOut",
    "TokenPage",
    "UserOut",
    "ValidationOut",
    "VersionOut",
    "VersionPage",
    "VersionRestore",
    "WebhookOut",
    "WebhookSecretOut",
    "WorkflowCreate",
    "WorkflowOut",
    "WorkflowPage",
    "WorkflowSave",
    "WorkflowSummaryOut",
)

_NO_NUL = r"^[^\x00]*$"
Email = Annotated[str, Meta(min_length=1, max_length=320, pattern=_NO_NUL)]
Password = Annotated[str, Meta(min_length=1, max_length=1024, pattern=_NO_NUL)]
TokenName = Annotated[str, Meta(min_length=1, max_length=100, pattern=_NO_NUL, description="what the token is for")]
Title = Annotated[str, Meta(max_length=200, pattern=_NO_NUL)]
Description = Annotated[str, Meta(max_length=10_000, pattern=_NO_NUL)]
JsonObject = dict[str, Any]
Nodes = Annotated[list[JsonObject], Meta(description="SPEC §1 nodes: {id, type, label?, position?, config, ...}")]
Notes = Annotated[
    list[JsonObject], Meta(description="SPEC §1 sticky notes: {id, text, position, size?, color?}; never executed")
]
Edges = Annotated[list[JsonObject], Meta(description="SPEC §1 edges: {id, source, target, sourceHandle?}")]


class Camel(msgspec.Struct, rename="camel", kw_only=True):
    pass


class Body(Camel, forbid_unknown_fields=True):
    """A request body: a field it does not define is a 400 naming it (a typo never passes silently)."""


ReadOnly = Annotated[Any, Meta(description="read-only: accepted and ignored, so a GET answer can be sent back")]


class ResourceBody(Body):
    """The body saving a resource, which may be the resource as read (its read-only fields are ignored)."""

    id: ReadOnly = None
    created_at: ReadOnly = None
    updated_at: ReadOnly = None


# -- accounts -----------------------------------------------------------------------------------------
class LoginRequest(Body):
    email: Email
    password: Password


class PasswordChange(Camel):
    current_password: Password
    new_password: Annotated[str, Meta(max_length=1024)]
    """Checked by the account rules (length, no NUL), which name ``newPassword`` when it is refused."""


class UserOut(Camel):
    id: str
    email: str
    tenant_id: str
    tenant_name: str


class SessionOut(Camel):
    user: UserOut
    auth_method: Literal["session", "token"]
    csrf_token: str | None = None
    """Send it back in the ``X-CSRF-Token`` header of every unsafe request made with the session cookie."""


class TokenCreate(Body):
    name: TokenName
    expires_in_days: Annotated[int, Meta(ge=1, le=3650)] | None = None


class TokenOut(Camel):
    id: str
    name: str
    prefix: str
    created_at: float
    last_used_at: float | None
    expires_at: float | None


class TokenCreated(TokenOut):
    token: str
    """The secret: shown this once, stored only as a hash."""


class TokenPage(Camel):
    items: list[TokenOut]
    next_cursor: str | None = None


# -- workflows ----------------------------------------------------------------------------------------
class DefinitionFields(ResourceBody):
    title: Title | None = None
    description: Description | None = None
    options: JsonObject | None = None
    nodes: Nodes = []
    edges: Edges = []
    notes: Notes | None = None


class WorkflowCreate(DefinitionFields):
    inputs: ReadOnly = None
    """Read-only (``WorkflowOut.inputs``): a workflow as read can be sent back. Not on a test run's body,
    where ``inputs`` would be a typo of ``input`` and stays a 400."""


VersionMessage = Annotated[str, Meta(max_length=500, description="what changed, shown in the version history")]


class WorkflowSave(WorkflowCreate, kw_only=True):
    version: Annotated[
        int, Meta(ge=1, le=2**31 - 1, description="the version this edit started from; a stale one is a 409")
    ]
    version_message: VersionMessage | None = None
    """Optional: said about the new version (its author is the caller, always)."""


class WorkflowOut(Camel):
    id: str
    version: int
    title: str
    description: str | None
    options: JsonObject | None
    nodes: list[JsonObject]
    edges: list[JsonObject]
    created_at: float
    updated_at: float
    notes: list[JsonObject] = []
    inputs: list[str] = []
    """The run-input fields its nodes read (``ctx.input.X``): a caller's arguments."""


class WorkflowSummaryOut(Camel):
    id: str
    title: str
    description: str | None
    version: int
    created_at: float
    updated_at: float


class WorkflowPage(Camel):
    items: list[WorkflowSummaryOut]
    next_cursor: str | None


class VersionOut(Camel):
    version: int
    title: str
    created_at: float
    author: str | None = None
    """The email of the user who saved it (absent on versions saved before authors were kept)."""
    message: str | None = None


class VersionRestore(Body):
    version_message: VersionMessage | None = None
    """Default: "Restored version N"."""


class VersionPage(Camel):
    items: list[VersionOut]
    next_cursor: str | None


class ValidationOut(Camel):
    valid: bool
    problems: list[Problem]


class ExampleOut(Camel):
    id: str
    title: str
    description: str
    input: Annotated[Any, Meta(description="a sample run input")] = None


class ExamplePage(Camel):
    items: list[ExampleOut]


# -- runs -----------------------------------------------------------------------------------------------
EpochSeconds = Annotated[float, Meta(ge=0, le=1e11)]


class StartRun(Body):
    input: Any = None
    available_at: (
        Annotated[EpochSeconds, Meta(description="start no earlier than this (PENDING until then)")] | None
    ) = None
    deadline_at: (
        Annotated[EpochSeconds, Meta(description="fail the run if it has not finished by then (before timeoutSeconds)")]
        | None
    ) = None
    labels: (
        Annotated[dict[str, Any], Meta(description="run labels, name -> string value (GET /api/runs?label.name=value)")]
        | None
    ) = None
    priority: (
        Annotated[
            int,
            Meta(ge=1, le=100, description="1-100 (default: the workflow's options.priority, else 50): higher first"),
        ]
        | None
    ) = None


class RetryRun(Body):
    version: Literal["original", "latest"] = "original"
    """``latest``: move the run to the workflow's latest saved version before running again."""


class StartTestRun(DefinitionFields):
    input: Any = None
    pinned: Annotated[JsonObject, Meta(description="nodeId -> output: those nodes complete at once")] | None = None
    workflow_id: (
        Annotated[
            str,
            Meta(
                pattern=r"^[A-Za-z0-9_-]{1,64}$",
                description="the saved workflow the editor is on: its run history lists this test run",
            ),
        ]
        | None
    ) = None


class RunAccepted(Camel):
    instance_id: str


class ResumedOut(Camel):
    """``POST /resume/{token}`` and ``POST /forms/{token}``: the run and the ``wait`` node that go on."""

    instance_id: str
    node_id: str


class RunSummary(Camel):
    instance_id: str
    workflow_id: str | None
    version: int | None
    is_test: bool
    status: RunStatus
    trigger: str
    error: str | None
    created_at: float
    started_at: float | None
    """When it began; while PENDING, when it is due to begin (its ``availableAt``)."""
    completed_at: float | None
    sla_breached_at: float | None
    """When the run passed options.slaSeconds unfinished (null: it has not)."""
    available_at: float | None = None
    """PENDING runs: when the scheduled start falls due."""
    parent_instance_id: str | None = None
    """The run whose ``workflow`` node started this one (trigger ``workflow``), if any."""
    parent_node_id: str | None = None
    """That run's calling node."""
    labels: dict[str, str] = {}
    """The run's labels (name -> value)."""
    retry: int = 0
    """How many partial retries the run has had (0: none): a failed run retried says so, whatever its status now."""


class RunPage(Camel):
    items: list[RunSummary]
    next_cursor: str | None


class RunCountOut(Camel):
    """How many runs match the list's filters: exact up to 10,000; ``more`` says there are more than ``count``."""

    count: int
    more: bool


class OutputTruncatedOut(Camel):
    """An output too large to show in full (engine/output_view.py); ``output`` is null beside it."""

    bytes: int
    """Its size as JSON."""
    preview: str
    """The start of its JSON."""
    href: str
    """Where it is read in full (``GET``, the same credentials)."""


class DecisionOut(Camel):
    email: str
    decision: Literal["approve", "reject"]
    comment: str | None
    at: float


class WaitingForOut(Camel, omit_defaults=True):
    resume_on: Literal["webhook", "form", "approval"]
    url: str | None
    """The path that resumes the node (``/resume/{token}``, or the form page ``/forms/{token}``), or an
    approval's page in the editor (``/approvals/{id}``)."""
    until: float
    """When its ``timeoutSeconds`` pass (epoch seconds)."""
    approval_id: str | None = None
    """An approval's id, for ``/api/approvals/{id}``."""
    required: int | None = None
    decisions: list[DecisionOut] | None = None
    """An approval's decisions so far and how many approvals it needs (live, once one is counted)."""


class NodeStateOut(Camel, omit_defaults=True):
    status: NodeStatus
    attempt: int
    started_at: float | None
    completed_at: float | None
    output: Any
    error: str | None
    output_truncated: OutputTruncatedOut | None = None
    """Set (and ``output`` null) when the output is too large to show: read it at ``href``."""
    pinned: bool = False
    logs: str | None = None
    next_attempt_at: float | None = None
    """RETRYING: when the next attempt starts; DISPATCHED behind a delay: when it falls due."""
    worker_id: str | None = None
    """The worker that started the latest attempt."""
    attempt_in_retry: int = 0
    """The attempt within the node's current retry (``attempt`` counts every attempt of the run)."""
    retry: int = 0
    """How many partial retries ran this node again (0: the original run)."""
    child_instance_id: str | None = None
    """A ``workflow`` node: the run its latest call started."""
    waiting_for: WaitingForOut | None = None
    """A ``wait`` node while WAITING: what it waits for, the URL that resumes it and until when."""
    loop: dict[str, Any] | None = None
    """One iteration of a loop-body node: the ``ctx.loop`` it ran with, ``{item, index, count}`` (an item too
    large to show is ``null`` with ``itemTruncated: {bytes, preview}``)."""
    holds: list[str] | None = None
    """A ``delay`` while WAITING: the successors it holds (PENDING until it falls due; the first of them to
    move ends the wait, so a client that joined late knows which update completes the delay)."""
    iterations: dict[str, NodeStateOut] | None = None


class RunDetail(RunSummary):
    input: Any = None
    output: Any = None
    output_truncated: OutputTruncatedOut | None = None
    """Set (and ``output`` null) when the run's output is too large to show: read it at ``href``."""
    nodes: dict[str, NodeStateOut] = {}
    priority: int = 50
    """Its priority in its workflow's flow-control queue (1-100, higher first)."""
    waiting_reason: str | None = None
    """Why a PENDING run has not begun: queued for options.concurrency, or held by options.debounce."""


class RunActionOut(Camel):
    instance_id: str
    status: RunStatus
    node_ids: list[str] = []
    """For a retry: the nodes started again."""


class EventOut(Camel):
    log_id: int
    instance_id: str
    node_id: str | None
    iteration: str
    event_type: str
    node_status: str | None
    output_variable: str | None
    payload: Any
    error_message: str | None
    node_attempt: int
    created_at: float
    payload_truncated: OutputTruncatedOut | None = None
    """Set (and ``payload`` null) when the row is too large to show; ``href`` reads its node's output."""


class EventPage(Camel):
    items: list[EventOut]
    next_cursor: str | None


class TimelineRowOut(Camel):
    node_id: str
    iteration: str
    attempt: int
    status: NodeStatus
    started_at: float | None
    completed_at: float | None
    worker_id: str | None = None
    """The worker that ran this attempt."""
    taken_over: bool = False
    """The attempt ended when another worker took the node over (its lease ran out)."""
    retry: int = 0
    """How many partial retries of the run came before this attempt (0: the run's first try)."""
    attempt_in_retry: int = 0
    """Its number within that retry ("attempt 1 of 3, retry 1"), as ``nodes.{id}.attemptInRetry`` counts."""


class TimelinePage(Camel):
    items: list[TimelineRowOut]
    next_cursor: str | None = None


class HealthOut(Camel):
    status: str
    database: str


# -- triggers -----------------------------------------------------------------------------------------
class WebhookOut(Camel):
    url: str
    """The path to POST to: ``/hooks/<workflow id>``."""
    has_secret: bool
    created_at: float | None
    """When the current secret was made (null: no secret; only API tokens are accepted)."""
    last_used_at: float | None
    """The last call the secret authenticated (written at most once a minute)."""


class WebhookSecretOut(Camel):
    url: str
    secret: str
    """``fdh_…``: shown this once, stored only as a hash. Send it in ``X-Flowdeck-Secret``."""


class HookPending(Camel):
    instance_id: str
    status: RunStatus
    """``RUNNING``: the run did not finish within ``wait`` seconds."""


class HookFinished(Camel):
    instance_id: str
    status: RunStatus
    output: Any
    error: str | None


# -- notifications (options.onFailure / options.onSlaBreach) ----------------------------------------------
class NotificationSettingsOut(Camel, omit_defaults=True):
    has_secret: bool
    created_at: float | None
    """When the current signing secret was made (null: none yet; the first notification URL makes one)."""
    secret: str | None = None
    """The signing secret, only the first time it is read after it was made (copy it now)."""


class NotificationSecretOut(Camel):
    secret: str


class NotificationTestIn(Body):
    url: str | None = None
    """Where to send the sample (default: the saved options.onFailure.url, else options.onSlaBreach.url)."""


class NotificationTestOut(Camel):
    url: str
    ok: bool
    status: int | None
    """The receiver's HTTP status (null: no answer)."""
    error: str | None


# -- settings -----------------------------------------------------------------------------------------
Days = Annotated[int, Meta(ge=0, le=MAX_DAYS, description="days; 0 keeps forever")]
RunCount = Annotated[int, Meta(ge=0, le=MAX_RUNS, description="runs; 0 means no limit")]


class RetentionIn(Body):
    """A tenant's retention policy: finished runs older than these ages or past the newest ``maxRuns``
    are deleted (docs/operations.md "Retention and pruning")."""

    max_age_days: Days
    """Production runs, by the time they were created."""
    test_max_age_days: Days
    """Test runs (the editor's runs of unsaved graphs and the runs they called)."""
    max_runs: RunCount
    """How many of the newest runs (production and test together) are kept whatever their age."""


class RetentionOut(Camel):
    max_age_days: int
    test_max_age_days: int
    max_runs: int
    custom: bool
    """The tenant set these; ``false``: they are the server's defaults (FLOWDECK_RETENTION_*)."""
    defaults: RetentionIn
    """The server's defaults, which ``DELETE`` goes back to."""
