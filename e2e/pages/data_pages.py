"""Page objects for the data sources, saved queries and account pages (found by data-testid)."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect


class DataSourcesPage:
    def __init__(self, page: Page) -> None:
        self.page = page

    def open_from_nav(self) -> DataSourcesPage:
        self.page.get_by_test_id("nav-data-sources").click()
        expect(self.page.get_by_test_id("data-sources-page")).to_be_visible()
        return self

    def row(self, name: str) -> Locator:
        return self.page.get_by_test_id("source-row").and_(self.page.locator(f'[data-name="{name}"]'))

    def field_error(self, test_id: str) -> Locator:
        """The error shown on the field that holds the control ``test_id``."""
        return self.page.locator(".field", has=self.page.get_by_test_id(test_id)).locator(".field__error")


class QueriesPage:
    def __init__(self, page: Page) -> None:
        self.page = page

    def open_from_nav(self) -> QueriesPage:
        self.page.get_by_test_id("nav-queries").click()
        expect(self.page.get_by_test_id("queries-page")).to_be_visible()
        return self

    def field_error(self, test_id: str) -> Locator:
        return self.page.locator(".field", has=self.page.get_by_test_id(test_id)).locator(".field__error")


class AccountPage:
    def __init__(self, page: Page) -> None:
        self.page = page

    def open_from_nav(self) -> AccountPage:
        self.page.get_by_test_id("current-user").click()
        expect(self.page.get_by_test_id("account-page")).to_be_visible()
        return self

    def field_error(self, test_id: str) -> Locator:
        return self.page.locator(".field", has=self.page.get_by_test_id(test_id)).locator(".field__error")
