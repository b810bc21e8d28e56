"""The account page: API tokens (shown once, copied, used, revoked) and changing the password."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
import uuid

import pytest
from pages.data_pages import AccountPage
from playwright.sync_api import Browser, Page, expect

from conftest import VIEWPORT, Server, shot


def _me_status(server: Server, token: str) -> int:
    request = urllib.request.Request(server.url + "/api/auth/me", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_an_api_token_is_shown_once_copied_works_and_is_revoked(page: Page, server: Server) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto("/")
    AccountPage(page).open_from_nav()
    name = f"ci-{uuid.uuid4().hex[:6]}"
    page.get_by_test_id("token-name").fill(name)
    page.get_by_test_id("token-days").fill("30")
    page.get_by_test_id("token-create").click()
    secret_box = page.get_by_test_id("token-secret")
    expect(secret_box).to_have_value(re.compile(r"^fdk_"))
    token = secret_box.input_value()
    page.get_by_test_id("token-copy").click()
    expect(page.get_by_test_id("toast").filter(has_text="Token copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == token
    shot(page, "account-token-created")

    assert _me_status(server, token) == 200
    row = page.get_by_test_id("token-row").and_(page.locator(f'[data-name="{name}"]'))
    expect(row).to_contain_text(token[:8])

    page.reload()  # shown once: gone after a reload, the list keeps only the prefix
    expect(page.get_by_test_id("token-created")).to_have_count(0)
    expect(row).to_be_visible()
    assert token not in page.content()

    # An in-app confirmation (never the browser's confirm()): Cancel keeps the token, Revoke revokes it.
    page.on("dialog", lambda dialog: pytest.fail(f"a browser dialog opened: {dialog.message}"))
    row.get_by_test_id("token-revoke").click()
    confirm = page.get_by_test_id("confirm-dialog")
    expect(confirm).to_contain_text(name)
    confirm.get_by_test_id("confirm-cancel").click()
    expect(confirm).to_have_count(0)
    expect(row).to_be_visible()
    assert _me_status(server, token) == 200
    row.get_by_test_id("token-revoke").click()
    page.get_by_test_id("confirm-dialog").get_by_test_id("confirm-ok").click()
    expect(row).to_have_count(0)
    assert _me_status(server, token) == 401


def test_a_token_without_a_name_is_refused_on_its_field(page: Page) -> None:
    page.goto("/account")
    page.get_by_test_id("token-create").click()
    account = AccountPage(page)
    expect(account.field_error("token-name")).to_be_visible()
    expect(page.get_by_test_id("token-created")).to_have_count(0)


def test_changing_the_password_checks_each_field_and_signs_out_the_other_sessions(
    browser: Browser, server: Server
) -> None:
    email, password, new_password = f"pw-{uuid.uuid4().hex[:8]}@example.com", "first-password-1", "second-password-2"
    server.add_user(email, password=password)

    def signed_in(secret: str) -> Page:
        context = browser.new_context(base_url=server.url, viewport=VIEWPORT)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto("/login")
        page.get_by_test_id("login-email").fill(email)
        page.get_by_test_id("login-password").fill(secret)
        page.get_by_test_id("login-submit").click()
        expect(page.get_by_test_id("workflow-list-page")).to_be_visible()
        return page

    laptop, phone = signed_in(password), signed_in(password)
    account = AccountPage(laptop).open_from_nav()

    laptop.get_by_test_id("password-current").fill("not my password")
    laptop.get_by_test_id("password-new").fill(new_password)
    laptop.get_by_test_id("password-repeat").fill(new_password)
    laptop.get_by_test_id("password-submit").click()
    expect(account.field_error("password-current")).to_have_text("the current password is wrong")

    laptop.get_by_test_id("password-current").fill(password)
    laptop.get_by_test_id("password-new").fill("short")
    laptop.get_by_test_id("password-repeat").fill("short")
    laptop.get_by_test_id("password-submit").click()
    expect(account.field_error("password-new")).to_contain_text("8 to")
    expect(account.field_error("password-current")).to_have_count(0)

    laptop.get_by_test_id("password-new").fill(new_password)
    laptop.get_by_test_id("password-repeat").fill(new_password + "x")
    laptop.get_by_test_id("password-submit").click()
    expect(account.field_error("password-repeat")).to_contain_text("differ")

    laptop.get_by_test_id("password-repeat").fill(new_password)
    laptop.get_by_test_id("password-submit").click()
    expect(laptop.get_by_test_id("toast").filter(has_text="Password changed")).to_be_visible()
    shot(laptop, "account-password-changed")

    phone.reload()  # the other session ended
    expect(phone).to_have_url(re.compile(r"/login"))
    laptop.reload()  # this one stays
    expect(laptop.get_by_test_id("account-page")).to_be_visible()

    fresh = signed_in(new_password)
    expect(fresh.get_by_test_id("current-user")).to_contain_text(email)
    for p in (laptop, phone, fresh):
        p.context.close()
