"""Passwords: argon2id hashes, computed off the event loop (a hash takes tens of milliseconds on purpose)."""

from __future__ import annotations

import asyncio
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

__all__ = ("MAX_PASSWORD_CHARS", "MIN_PASSWORD_CHARS", "PasswordService", "generate_password")

MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_CHARS = 1024


def generate_password() -> str:
    return secrets.token_urlsafe(15)


class PasswordService:
    """argon2id with the library's defaults (RFC 9106 low-memory profile) unless a hasher is given."""

    def __init__(self, hasher: PasswordHasher | None = None) -> None:
        self._hasher = hasher or PasswordHasher()
        # Verifying an unknown email against a real hash keeps its timing equal to a wrong password.
        self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(16))

    async def hash(self, password: str) -> str:
        return await asyncio.to_thread(self._hasher.hash, password)

    async def verify(self, password_hash: str | None, password: str) -> bool:
        """``True`` when ``password`` matches; an absent hash is checked against a dummy (and fails)."""
        return await asyncio.to_thread(self._verify_sync, password_hash, password)

    def needs_rehash(self, password_hash: str) -> bool:
        return bool(self._hasher.check_needs_rehash(password_hash))

    def _verify_sync(self, password_hash: str | None, password: str) -> bool:
        try:
            self._hasher.verify(password_hash or self._dummy_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
        return password_hash is not None
