"""The whole schema: importing this registers every table module on the shared ``metadata``.

Alembic and ``Database.create_all`` use ``schema.metadata``; a new table module adds its import here.
"""

from __future__ import annotations

import flowdeck.storage.account_tables  # (users, sessions, API tokens, login links)
import flowdeck.storage.data_tables  # (data sources, saved queries)
import flowdeck.storage.notice_tables  # (notification outbox and secrets)
import flowdeck.storage.retention_tables  # (tenants' retention policies)
import flowdeck.storage.trigger_tables  # (webhook secrets)
import flowdeck.storage.widget_tables  # noqa: F401  (widgets, embed tokens)
from flowdeck.storage.approval_tables import approval_decisions, approvals
from flowdeck.storage.notice_tables import run_notices
from flowdeck.storage.tables import (
    instance_logs,
    join_barriers,
    loop_states,
    metadata,
    node_jobs,
    run_flow,
    run_labels,
    wait_tokens,
)

__all__ = ("RUN_OWNED_TABLES", "metadata")

RUN_OWNED_TABLES = (
    instance_logs,
    node_jobs,
    join_barriers,
    loop_states,
    run_notices,
    run_labels,
    wait_tokens,
    approvals,
    approval_decisions,
    run_flow,
)
"""The tables whose rows belong to one run (``instance_id``): deleting a run deletes its rows in each
(a test run deleted by its user, a finished run past its retention). A new such table is added here."""
