"""Each workflow's notification secret: the HMAC key of ``X-Flowdeck-Signature``.

Signing needs the raw key, so it is stored encrypted (``SecretBox``, ``FLOWDECK_SECRET_KEY``), not
hashed. It is made with the workflow's first notification URL (or on request), shown once in the
editor's Settings (``reveal`` hands it out while ``shown_at`` is empty) and rotatable.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

import sqlalchemy as sa

from flowdeck.queries.secrets import SecretBox
from flowdeck.storage.database import Database
from flowdeck.storage.notice_tables import notification_secrets

__all__ = ("NotificationSecrets", "SecretInfo")


@dataclass(frozen=True, slots=True)
class SecretInfo:
    created_at: float | None
    secret: str | None
    """The plain secret, only the first time it is asked for after it was made."""


class NotificationSecrets:
    def __init__(self, db: Database, box: SecretBox) -> None:
        self.db = db
        self.box = box

    def _seal(self, raw: str) -> str:
        return self.box.encrypt({"key": raw})

    async def ensure(self, tenant_id: str, workflow_id: str) -> None:
        """Make a secret if the workflow has none (it is revealed by the next ``reveal``)."""
        raw = "fdn_" + secrets.token_urlsafe(32)
        values = {
            "workflow_id": workflow_id,
            "tenant_id": tenant_id,
            "secret_enc": self._seal(raw),
            "created_at": time.time(),
        }
        async with self.db.transaction() as conn:
            await conn.execute(self.db.insert(notification_secrets).values(values).on_conflict_do_nothing())

    async def rotate(self, tenant_id: str, workflow_id: str) -> str:
        """A new secret (returned this once, and marked shown); the previous one stops signing at once."""
        raw = "fdn_" + secrets.token_urlsafe(32)
        now = time.time()
        values = {"tenant_id": tenant_id, "secret_enc": self._seal(raw), "created_at": now, "shown_at": now}
        stmt = self.db.insert(notification_secrets).values(workflow_id=workflow_id, **values)
        async with self.db.transaction() as conn:
            await conn.execute(stmt.on_conflict_do_update(index_elements=["workflow_id"], set_=values))
        return raw

    async def reveal(self, tenant_id: str, workflow_id: str) -> SecretInfo:
        """When the secret was made, and the secret itself if it was never shown (marked shown now)."""
        async with self.db.transaction() as conn:
            row = (
                await conn.execute(
                    sa.select(notification_secrets.c.created_at, notification_secrets.c.shown_at).where(
                        notification_secrets.c.workflow_id == workflow_id,
                        notification_secrets.c.tenant_id == tenant_id,
                    )
                )
            ).first()
            if row is None:
                return SecretInfo(None, None)
            if row.shown_at is not None:
                return SecretInfo(row.created_at, None)
            shown = await conn.execute(
                notification_secrets.update()
                .where(notification_secrets.c.workflow_id == workflow_id, notification_secrets.c.shown_at.is_(None))
                .values(shown_at=time.time())
                .returning(notification_secrets.c.secret_enc)
            )
            sealed = shown.scalar_one_or_none()
        return SecretInfo(row.created_at, None if sealed is None else self.box.decrypt(sealed)["key"])

    async def key(self, workflow_id: str) -> str | None:
        """The raw key that signs the workflow's notifications (``None``: it has none)."""
        async with self.db.read() as conn:
            sealed = (
                await conn.execute(
                    sa.select(notification_secrets.c.secret_enc).where(
                        notification_secrets.c.workflow_id == workflow_id
                    )
                )
            ).scalar_one_or_none()
        return None if sealed is None else self.box.decrypt(sealed)["key"]
