"""Whose address a login is counted under (issue 11 §6): ``X-Forwarded-For`` is believed only from the proxies
listed in ``FLOWDECK_TRUSTED_PROXIES``, so an attacker cannot dodge the per-address limit by inventing addresses."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowdeck.accounts.rate_limit import LoginLimits
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from tests.api.conftest import Server, serve

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIMITS = LoginLimits(per_email=1000, per_address=3)


async def wrong_logins(server: Server, forwarded_for: list[str]) -> list[int]:
    codes = []
    async with server.client() as attacker:
        for n, header in enumerate(forwarded_for):
            answer = await attacker.post(
                "/api/auth/login",
                json={"email": f"guess{n}@example.com", "password": "not the password"},
                headers={"X-Forwarded-For": header},
            )
            codes.append(answer.status_code)
    return codes


async def test_without_trusted_proxies_a_forged_forwarded_for_is_ignored(api_db: Database, tmp_path: Path) -> None:
    async with serve(api_db, tmp_path, login_limits=LIMITS) as server:
        forged = [f"198.51.100.{n}" for n in range(6)]
        assert await wrong_logins(server, forged) == [401, 401, 401, 429, 429, 429]


async def test_a_trusted_proxy_names_the_client_and_cannot_be_fooled_by_what_the_client_prepends(
    api_db: Database, tmp_path: Path
) -> None:
    settings = {"trusted_proxies": ("127.0.0.1", "10.0.0.0/8")}
    async with serve(api_db, tmp_path, settings=settings, login_limits=LIMITS) as server:
        # Behind the proxy, each real client has its own budget...
        assert await wrong_logins(server, [f"203.0.113.{n}" for n in range(5)]) == [401] * 5
        # ...and one client cannot escape it by prepending forged hops: the rightmost untrusted address counts
        # (10.1.2.3 is a trusted inner proxy, 192.0.2.7 the client it saw).
        forged = [f"198.51.100.{n}, 192.0.2.7, 10.1.2.3" for n in range(5)]
        assert await wrong_logins(server, forged) == [401, 401, 401, 429, 429]


@pytest.mark.parametrize("value", ["10.0.0.1, proxy.internal", "10.0.0.0/33", "::1/200"])
async def test_a_bad_trusted_proxy_entry_is_refused_naming_the_variable(value: str) -> None:
    with pytest.raises(ValueError, match="FLOWDECK_TRUSTED_PROXIES"):
        Settings.from_env({"FLOWDECK_TRUSTED_PROXIES": value})


async def test_trusted_proxies_are_read_from_the_environment() -> None:
    settings = Settings.from_env({"FLOWDECK_TRUSTED_PROXIES": " 10.0.0.1 , 172.16.0.0/12,::1 ,"})
    assert settings.trusted_proxies == ("10.0.0.1", "172.16.0.0/12", "::1")
    assert Settings.from_env({}).trusted_proxies == ()
