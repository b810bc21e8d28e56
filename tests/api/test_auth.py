"""Accounts over HTTP: password login with a session cookie and CSRF, logout, rate limits, API tokens, login links."""

from __future__ import annotations

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
import sqlalchemy as sa

from flowdeck.accounts.store import AccountStore
from flowdeck.storage.account_tables import api_tokens, users
from tests.api.conftest import PASSWORD, Account, Server
from tests.support.graphs import linear

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def login(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> httpx.Response:
    return await client.post("/api/auth/login", json={"email": email, "password": password})


async def test_login_sets_an_httponly_samesite_session_cookie_and_answers_the_csrf_token(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    response = await login(anonymous, f"  {alice.email.upper()} ")  # emails are matched case-insensitively
    assert response.status_code == 200
    body = response.json()
    assert body["user"]["email"] == alice.email and body["user"]["tenantName"] == alice.tenant
    assert body["authMethod"] == "session" and len(body["csrfToken"]) > 20
    set_cookies = response.headers.get_list("set-cookie")
    session = next(c for c in set_cookies if c.startswith("flowdeck_session="))
    assert "HttpOnly" in session and "SameSite=lax" in session and "Path=/" in session
    csrf = next(c for c in set_cookies if c.startswith("flowdeck_csrf="))
    assert "HttpOnly" not in csrf and body["csrfToken"] in csrf
    assert response.cookies["flowdeck_session"] not in response.text  # the secret is only in the cookie

    me = await anonymous.get("/api/auth/me")
    assert me.status_code == 200 and me.json() == body


async def test_a_cookie_session_needs_the_csrf_header_for_changes(alice: Account, anonymous: httpx.AsyncClient) -> None:
    csrf = (await login(anonymous, alice.email)).json()["csrfToken"]
    assert (await anonymous.get("/api/workflows")).status_code == 200

    refused = await anonymous.post("/api/workflows", json=linear(1))
    assert refused.status_code == 403 and "X-CSRF-Token" in refused.json()["detail"]
    wrong = await anonymous.post("/api/workflows", json=linear(1), headers={"X-CSRF-Token": "guess"})
    assert wrong.status_code == 403
    cross_site = await anonymous.post(
        "/api/workflows", json=linear(1), headers={"X-CSRF-Token": csrf, "Origin": "https://evil.example"}
    )
    assert cross_site.status_code == 403
    ok = await anonymous.post("/api/workflows", json=linear(1), headers={"X-CSRF-Token": csrf})
    assert ok.status_code == 201


async def test_logout_ends_the_session(alice: Account, anonymous: httpx.AsyncClient) -> None:
    csrf = (await login(anonymous, alice.email)).json()["csrfToken"]
    session = anonymous.cookies["flowdeck_session"]
    response = await anonymous.post("/api/auth/logout", headers={"X-CSRF-Token": csrf})
    assert response.status_code == 204
    assert (await anonymous.get("/api/auth/me")).status_code == 401
    anonymous.cookies.set("flowdeck_session", session)  # a stolen copy of the old cookie is worthless too
    assert (await anonymous.get("/api/auth/me")).status_code == 401


async def test_wrong_credentials_are_a_401_that_does_not_say_which_part_was_wrong(
    alice: Account, anonymous: httpx.AsyncClient
) -> None:
    wrong_password = await login(anonymous, alice.email, "not the password")
    unknown_user = await login(anonymous, "nobody@acme.test")
    assert wrong_password.status_code == unknown_user.status_code == 401
    assert wrong_password.json()["detail"] == unknown_user.json()["detail"] == "wrong email or password"
    assert (await anonymous.get("/api/workflows")).status_code == 401


async def test_repeated_failed_logins_are_rate_limited(alice: Account, anonymous: httpx.AsyncClient) -> None:
    for _ in range(5):
        assert (await login(anonymous, alice.email, "guess-guess")).status_code == 401
    limited = await login(anonymous, alice.email)  # even the right password, until the window passes
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0


async def test_passwords_are_stored_as_argon2id_hashes(server: Server, alice: Account) -> None:
    async with server.engine.db.read() as conn:
        stored = (await conn.execute(sa.select(users.c.password_hash).where(users.c.email == alice.email))).scalar()
    assert stored.startswith("$argon2id$") and PASSWORD not in stored


async def test_api_tokens_are_shown_once_hashed_at_rest_revocable_and_track_their_last_use(
    server: Server, alice: Account
) -> None:
    created = await alice.client.post("/api/tokens", json={"name": "ci", "expiresInDays": 30})
    assert created.status_code == 201
    token = created.json()
    assert token["token"].startswith("fdk_") and token["prefix"] == token["token"][:12]
    assert token["lastUsedAt"] is None and token["expiresAt"] > token["createdAt"]

    async with server.client(headers={"Authorization": f"Bearer {token['token']}"}) as ci:
        me = await ci.get("/api/auth/me")
        assert me.json()["authMethod"] == "token" and me.json()["csrfToken"] is None
        listed = (await alice.client.get("/api/tokens")).json()
        assert listed["nextCursor"] is None
        [row] = [t for t in listed["items"] if t["id"] == token["id"]]
        assert "token" not in row and row["lastUsedAt"] is not None
        async with server.engine.db.read() as conn:
            stored = (await conn.execute(sa.select(api_tokens).where(api_tokens.c.id == token["id"]))).one()
        assert token["token"] not in str(tuple(stored))

        assert (await alice.client.delete(f"/api/tokens/{token['id']}")).status_code == 204
        assert (await ci.get("/api/auth/me")).status_code == 401
        assert (await alice.client.delete(f"/api/tokens/{token['id']}")).status_code == 404
        assert token["id"] not in [t["id"] for t in (await alice.client.get("/api/tokens")).json()["items"]]


async def test_a_malformed_authorization_header_is_a_401(server: Server, alice: Account) -> None:
    for header in ("Basic abc", "Bearer", f"Token {alice.token}", "Bearer fdk_" + "x" * 40):
        async with server.client(headers={"Authorization": header}) as client:
            assert (await client.get("/api/workflows")).status_code == 401, header


async def test_a_login_link_signs_in_once(server: Server, alice: Account, anonymous: httpx.AsyncClient) -> None:
    accounts = server.app.context.services.accounts
    user = await accounts.store.user_by_email(alice.email)
    assert user is not None
    secret = await accounts.create_login_link(user.id)

    opened = await anonymous.get(f"/api/auth/link/{secret}")
    assert opened.status_code in (302, 303) and opened.headers["location"] == "/"
    assert (await anonymous.get("/api/auth/me")).json()["user"]["email"] == alice.email
    async with server.client() as other:
        assert (await other.get(f"/api/auth/link/{secret}")).status_code == 404


async def test_changing_the_password_needs_the_current_one_and_ends_the_other_sessions(
    server: Server, alice: Account
) -> None:
    async with server.client() as browser, server.client() as laptop:
        csrf = (await login(browser, alice.email)).json()["csrfToken"]
        await login(laptop, alice.email)
        headers = {"X-CSRF-Token": csrf}

        wrong = await browser.post(
            "/api/auth/password",
            json={"currentPassword": "not it at all", "newPassword": "a brand new password"},
            headers=headers,
        )
        assert wrong.status_code == 400
        assert wrong.json()["extra"] == [{"path": "currentPassword", "message": "the current password is wrong"}]
        short = await browser.post(
            "/api/auth/password", json={"currentPassword": PASSWORD, "newPassword": "short"}, headers=headers
        )
        assert short.status_code == 400
        assert [p["path"] for p in short.json()["extra"]] == ["newPassword"]
        assert (await laptop.get("/api/auth/me")).status_code == 200  # nothing changed yet

        changed = await browser.post(
            "/api/auth/password",
            json={"currentPassword": PASSWORD, "newPassword": "a brand new password"},
            headers=headers,
        )
        assert changed.status_code == 204, changed.text
        assert (await browser.get("/api/auth/me")).status_code == 200  # the session that changed it stays
        assert (await laptop.get("/api/auth/me")).status_code == 401  # every other one ends
        assert (await alice.client.get("/api/auth/me")).status_code == 200  # API tokens are not sessions

    async with server.client() as fresh:
        assert (await login(fresh, alice.email)).status_code == 401
        assert (await login(fresh, alice.email, "a brand new password")).status_code == 200


async def test_a_password_change_without_its_fields_is_a_400_naming_them(alice: Account) -> None:
    response = await alice.client.post("/api/auth/password", json={"newPassword": "long enough password"})
    assert response.status_code == 400
    assert "currentPassword" in response.text


async def test_guessing_the_current_password_is_rate_limited_like_a_login(alice: Account) -> None:
    for _ in range(5):
        guess = await alice.client.post(
            "/api/auth/password", json={"currentPassword": "guess-guess", "newPassword": "whatever it is now"}
        )
        assert guess.status_code == 400
    limited = await alice.client.post(
        "/api/auth/password", json={"currentPassword": PASSWORD, "newPassword": "whatever it is now"}
    )
    assert limited.status_code == 429


async def test_a_token_whose_use_cannot_be_noted_still_authenticates(
    server: Server, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Noting a token's last use is bookkeeping: PostgreSQL cutting that write's connection (a restart, a
    ``pg_terminate_backend``) does not turn the request into a 500 (the chaos suite's crash soak found one)."""
    created = (await alice.client.post("/api/tokens", json={"name": "noted-later"})).json()
    tried: list[str] = []

    async def cut(self: AccountStore, token_id: str, now: float) -> None:
        tried.append(token_id)
        raise asyncpg.AdminShutdownError("terminating connection due to administrator command")

    monkeypatch.setattr(AccountStore, "touch_token", cut)
    async with server.client(headers={"Authorization": f"Bearer {created['token']}"}) as ci:
        me = await ci.get("/api/auth/me")
    assert me.status_code == 200 and me.json()["authMethod"] == "token"
    assert tried == [created["id"]]
