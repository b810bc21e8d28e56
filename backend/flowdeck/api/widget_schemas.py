"""REST schemas of widgets and their embed links (docs/widgets.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from flowdeck.api.schemas import Body, Camel, JsonObject, ResourceBody, Title
from flowdeck.domain.statuses import RunStatus

__all__ = (
    "EmbedTokenCreate",
    "EmbedTokenCreated",
    "EmbedTokenOut",
    "EmbedTokenPage",
    "WidgetDataOut",
    "WidgetErrorOut",
    "WidgetIn",
    "WidgetMode",
    "WidgetOut",
    "WidgetPage",
    "WidgetTypeName",
)


# -- widgets (docs/widgets.md) ------------------------------------------------------------------------
WidgetTypeName = Literal["table", "chart", "metric", "text", "json"]
WidgetMode = Literal["replay", "sync"]


class WidgetIn(ResourceBody, kw_only=True):
    """A widget to create, or all of it to save (``PUT``)."""

    workflow_id: Annotated[str, Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    name: Title
    type: WidgetTypeName
    mode: WidgetMode = "replay"
    config: Annotated[JsonObject, Meta(description="per type; see docs/widgets.md")] = {}
    frame_ancestors: (
        Annotated[
            list[Annotated[str, Meta(max_length=300)]],
            Meta(description="origins that may frame the embed page; null: any site"),
        ]
        | None
    ) = None


class WidgetOut(Camel):
    id: str
    workflow_id: str
    name: str
    type: WidgetTypeName
    mode: WidgetMode
    config: JsonObject
    frame_ancestors: list[str] | None
    created_at: float
    updated_at: float


class WidgetPage(Camel):
    items: list[WidgetOut]
    next_cursor: str | None


class WidgetErrorOut(Camel):
    field: str | None
    """The config field at fault; null when the run itself failed or there is no run yet."""
    message: str


class WidgetDataOut(Camel):
    widget_id: str | None
    type: WidgetTypeName
    mode: Literal["replay", "sync", "run"]
    status: Literal["ready", "empty", "running", "error"]
    run_id: str | None
    run_status: RunStatus | None
    run_completed_at: float | None
    data: JsonObject | None
    error: WidgetErrorOut | None


class EmbedTokenCreate(Body):
    expires_in_days: Annotated[int, Meta(ge=1, le=3650)] = 365


class EmbedTokenOut(Camel):
    id: str
    widget_id: str
    prefix: str
    created_at: float
    expires_at: float
    revoked_at: float | None
    last_used_at: float | None


class EmbedTokenCreated(Camel):
    id: str
    token: str
    """The secret: shown this once, stored only as a hash."""
    widget_id: str
    prefix: str
    expires_at: float
    created_at: float
    url: str


class EmbedTokenPage(Camel):
    items: list[EmbedTokenOut]
    next_cursor: str | None = None
