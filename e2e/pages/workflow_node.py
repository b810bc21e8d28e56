"""Page object for the Run workflow node: its inspector form, and the links between a run and its child runs."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect


class WorkflowNodeForm:
    """The inspector form of a selected ``workflow`` node."""

    def __init__(self, page: Page) -> None:
        self.page = page

    def pick(self, title: str) -> None:
        """Type part of the title into the searchable list, then choose the workflow with that title."""
        search = self.page.get_by_test_id("workflow-search")
        search.fill(title)
        option = self.page.locator(f'[data-testid="workflow-option"][data-title="{title}"]')
        expect(option).to_have_count(1)
        option.click()
        expect(self.page.get_by_test_id("workflow-chosen")).to_contain_text(title)

    def argument(self, name: str) -> Locator:
        return self.page.get_by_test_id(f"workflow-arg-{name}")

    def set_argument(self, name: str, value: str) -> None:
        field = self.argument(name)
        field.fill(value)
        expect(field).to_have_value(value)


class RunLinks:
    """The links of a run detail page to the runs it called and to the run that called it."""

    def __init__(self, page: Page) -> None:
        self.page = page

    def child_link(self, node_id: str) -> Locator:
        return self.page.locator(f'.react-flow__node[data-id="{node_id}"]').get_by_test_id("child-run-link")

    def parent_banner(self) -> Locator:
        return self.page.get_by_test_id("run-parent")

    def expect_status(self, status: str, timeout: float = 20_000) -> None:
        expect(self.page.get_by_test_id("run-detail")).to_have_attribute("data-status", status, timeout=timeout)
