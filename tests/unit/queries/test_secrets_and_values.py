"""Secrets at rest and JSON-safe result values."""

from __future__ import annotations

import datetime as dt
import ipaddress
import uuid
from decimal import Decimal

import pytest

from flowdeck.queries.secrets import SecretBox, SecretDecryptionError, SecretKeyMissingError
from flowdeck.queries.values import json_safe


def test_secrets_round_trip_and_the_token_hides_them() -> None:
    box = SecretBox("correct horse battery staple")
    token = box.encrypt({"password": "pa55-word", "X-Key": "k"})
    assert "pa55" not in token and "password" not in token
    assert token != box.encrypt({"password": "pa55-word", "X-Key": "k"})  # a fresh IV every time
    assert SecretBox("correct horse battery staple").decrypt(token) == {"X-Key": "k", "password": "pa55-word"}
    assert "staple" not in repr(box)


def test_a_wrong_or_missing_key_is_a_clear_error() -> None:
    token = SecretBox("one").encrypt({"a": "b"})
    with pytest.raises(SecretDecryptionError, match="was the key changed"):
        SecretBox("two").decrypt(token)
    with pytest.raises(SecretDecryptionError):
        SecretBox("one").decrypt("not a token")
    with pytest.raises(SecretKeyMissingError, match="FLOWDECK_SECRET_KEY is not set"):
        SecretBox(None).encrypt({"a": "b"})
    with pytest.raises(SecretKeyMissingError):
        SecretBox.from_env({}).decrypt(token)
    assert SecretBox.from_env({"FLOWDECK_SECRET_KEY": "one"}).decrypt(token) == {"a": "b"}


def test_json_safe_values() -> None:
    when = dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)
    ref = uuid.UUID(int=7)
    row = {
        "when": when, "day": dt.date(2024, 5, 1), "at": dt.time(8, 15), "took": dt.timedelta(minutes=1, seconds=30),
        "price": Decimal("12.50"), "nan": float("nan"), "inf": Decimal("Infinity"), "bytes": b"\x00\xff",
        "view": memoryview(b"ab"), "ref": ref, "ip": ipaddress.ip_address("10.0.0.1"), "nested": {1: [(1, 2), {3}]},
        "plain": [None, True, 3, 1.5, "s"],
    }  # fmt: skip
    assert json_safe(row) == {
        "when": "2024-05-01T12:30:00+00:00", "day": "2024-05-01", "at": "08:15:00", "took": 90.0, "price": "12.50",
        "nan": None, "inf": None, "bytes": "AP8=", "view": "YWI=", "ref": str(ref), "ip": "10.0.0.1",
        "nested": {"1": [[1, 2], [3]]}, "plain": [None, True, 3, 1.5, "s"],
    }  # fmt: skip
