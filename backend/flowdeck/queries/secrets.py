"""Secrets at rest: Fernet (AES-128-CBC + HMAC-SHA256) with a key derived from ``FLOWDECK_SECRET_KEY``.

The Fernet key is HKDF-SHA256 of the configured key with a fixed, purpose-specific salt and info, so
the same ``FLOWDECK_SECRET_KEY`` can serve other purposes (sessions, tokens) without sharing keys.
A missing key is only an error when a secret has to be stored or read; a data source without secrets
works without one. Changing the key makes stored secrets unreadable (``SecretDecryptionError``).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ("SecretBox", "SecretDecryptionError", "SecretKeyMissingError")

_SALT = b"flowdeck/data-source-secrets"
_INFO = b"fernet-key/v1"


class SecretKeyMissingError(RuntimeError):
    """No ``FLOWDECK_SECRET_KEY``, and a secret has to be encrypted or decrypted."""


class SecretDecryptionError(RuntimeError):
    """Stored secrets do not decrypt with the configured key (it changed, or the data is damaged)."""


def _derive(key: str) -> Fernet:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=_INFO)
    return Fernet(base64.urlsafe_b64encode(hkdf.derive(key.encode())))


class SecretBox:
    """Encrypts a ``{name: value}`` mapping into one token and back."""

    def __init__(self, key: str | None) -> None:
        self._fernet = _derive(key) if key else None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SecretBox:
        return cls((os.environ if env is None else env).get("FLOWDECK_SECRET_KEY") or None)

    def __repr__(self) -> str:
        return f"SecretBox(key={'set' if self._fernet else 'missing'})"

    def _require(self, action: str) -> Fernet:
        if self._fernet is None:
            raise SecretKeyMissingError(
                f"FLOWDECK_SECRET_KEY is not set: it is needed to {action} data-source secrets; "
                "set it to a long random string and keep it stable across restarts"
            )
        return self._fernet

    def encrypt(self, secrets: Mapping[str, str]) -> str:
        payload = json.dumps(dict(secrets), separators=(",", ":"), sort_keys=True).encode()
        return self._require("encrypt").encrypt(payload).decode("ascii")

    def decrypt(self, token: str) -> dict[str, str]:
        try:
            payload = self._require("decrypt").decrypt(token.encode("ascii"))
        except (InvalidToken, UnicodeEncodeError):
            raise SecretDecryptionError(
                "stored secrets cannot be decrypted with the configured FLOWDECK_SECRET_KEY "
                "(was the key changed?); enter the secrets again"
            ) from None
        value = json.loads(payload)
        if not isinstance(value, dict):
            raise SecretDecryptionError("stored secrets are damaged")
        return {str(k): str(v) for k, v in value.items()}
