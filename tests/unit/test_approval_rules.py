"""The rules of an approval (domain/approvals.py): who may decide, what resolves it, what a config may say."""

from __future__ import annotations

import pytest

from flowdeck.domain.approvals import ApprovalRule, approval_issues, outcome, refusal, rule_of

ANY = ApprovalRule((), 1, False)


def why(rule: ApprovalRule, user: str, *, requested_by: str | None = "req", is_test: bool = False) -> str | None:
    found = refusal(
        rule, user_id=user, email=f"{user}@acme.test", requested_by=requested_by, is_test=is_test, decided_by=["done"]
    )
    return None if found is None else found.kind


@pytest.mark.parametrize(
    ("rule", "user", "requested_by", "is_test", "expected"),
    [
        (ANY, "bob", "req", False, None),
        (ANY, "req", "req", False, "forbidden"),  # self-approval
        (ApprovalRule((), 1, True), "req", "req", False, None),  # allowed
        (ANY, "req", None, False, None),  # a webhook or schedule start: nobody requested it
        (ANY, "done", "req", False, "decided"),
        (ApprovalRule(("ann@acme.test",), 1, False), "bob", "req", False, "forbidden"),
        (ApprovalRule(("ann@acme.test",), 1, False), "ann", "req", False, None),
        (ApprovalRule(("ann@acme.test",), 1, False), "req", "req", True, None),  # a test run's designer
        (ApprovalRule(("ann@acme.test",), 1, False), "bob", "req", True, "forbidden"),  # ... only them
    ],
)
def test_who_may_decide(
    rule: ApprovalRule, user: str, requested_by: str | None, is_test: bool, expected: str | None
) -> None:
    assert why(rule, user, requested_by=requested_by, is_test=is_test) == expected


def test_what_resolves_it() -> None:
    assert outcome(["approve"], 2) is None
    assert outcome(["approve", "approve"], 2) == "approve"
    assert outcome(["approve", "reject"], 2) == "reject"
    assert outcome(["reject"], 3) == "reject"  # at once, whatever required
    assert outcome(["approve"], 3, sole=True) == "approve"


def test_config_issues_name_the_field() -> None:
    assert approval_issues({}) == []
    paths = [
        i.path
        for i in approval_issues({"approvers": ["a@x.io", "A@X.io ", "nope"], "required": 3, "allowSelfApproval": 1})
    ]
    assert paths == ["config.approvers[1]", "config.approvers[2]", "config.required", "config.allowSelfApproval"]
    assert [i.path for i in approval_issues({"required": True})] == ["config.required"]
    assert rule_of({"approvers": [" Ann@Acme.test"], "required": 1}) == ApprovalRule(("ann@acme.test",), 1, False)
