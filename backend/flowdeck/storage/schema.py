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
from flowdeck.storage.tables import metadata

__all__ = ("metadata",)
