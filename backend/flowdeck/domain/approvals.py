"""The rules of an approval wait (``resumeOn: "approval"``, docs/waits.md "Approvals"), pure.

Who may decide: a user of the run's tenant who is among ``approvers`` (any user when it is empty), who has
not decided it before, and who did not start the run unless ``allowSelfApproval``. A test run's own user
may always decide it, alone (the designer finishing a test run from the canvas). The outcome: the first
``reject`` rejects at once; the ``required``-th distinct ``approve`` approves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from flowdeck.domain.errors import ConfigIssue

__all__ = (
    "DECISIONS",
    "ApprovalRule",
    "Decision",
    "Refusal",
    "approval_issues",
    "misplaced_approval_keys",
    "outcome",
    "refusal",
    "rule_of",
)

Decision = Literal["approve", "reject"]
DECISIONS: Final = ("approve", "reject")
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_APPROVAL_KEYS: Final = ("approvers", "required", "allowSelfApproval")


@dataclass(frozen=True, slots=True)
class ApprovalRule:
    approvers: tuple[str, ...]
    """Lower-cased emails; empty: any user of the tenant."""
    required: int
    allow_self: bool


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a user may not decide: ``forbidden`` (403) or ``decided`` (409, they decided already)."""

    kind: Literal["forbidden", "decided"]
    message: str


def rule_of(config: Mapping[str, Any]) -> ApprovalRule:
    """The rule of a checked config (``approval_issues`` found nothing)."""
    approvers = tuple(dict.fromkeys(str(e).strip().lower() for e in config.get("approvers") or []))
    return ApprovalRule(approvers, int(config.get("required", 1)), bool(config.get("allowSelfApproval", False)))


def approval_issues(config: Mapping[str, Any]) -> list[ConfigIssue]:
    """What is wrong with an approval wait's ``approvers``, ``required`` and ``allowSelfApproval``."""
    issues: list[ConfigIssue] = []
    approvers = config.get("approvers", [])
    if not isinstance(approvers, list):
        issues.append(ConfigIssue("config.approvers", "approvers must be a list of emails"))
        approvers = []
    seen: set[str] = set()
    for i, email in enumerate(approvers):
        if not isinstance(email, str) or len(email) > 320 or not _EMAIL.match(email.strip()):
            issues.append(ConfigIssue(f"config.approvers[{i}]", f"approvers[{i}] must be an email address"))
        elif email.strip().lower() in seen:
            issues.append(ConfigIssue(f"config.approvers[{i}]", f"approvers[{i}] ({email}) is listed twice"))
        else:
            seen.add(email.strip().lower())
    required = config.get("required", 1)
    if isinstance(required, bool) or not isinstance(required, int) or required < 1:
        issues.append(ConfigIssue("config.required", "required must be a whole number of at least 1"))
    elif seen and required > len(seen):
        issues.append(
            ConfigIssue("config.required", f"required is {required} but only {len(seen)} approver(s) are listed")
        )
    if not isinstance(config.get("allowSelfApproval", False), bool):
        issues.append(ConfigIssue("config.allowSelfApproval", "allowSelfApproval must be true or false"))
    return issues


def misplaced_approval_keys(config: Mapping[str, Any]) -> list[ConfigIssue]:
    """Approval settings on a wait that is not an approval."""
    return [ConfigIssue(f"config.{k}", f'{k} is for resumeOn "approval" only') for k in _APPROVAL_KEYS if k in config]


def refusal(
    rule: ApprovalRule,
    *,
    user_id: str,
    email: str,
    requested_by: str | None,
    is_test: bool,
    decided_by: Sequence[str],
) -> Refusal | None:
    """Why this user may not decide now (``None``: they may)."""
    if user_id in decided_by:
        return Refusal("decided", "you have decided this approval already")
    if is_test and requested_by == user_id:
        return None  # the designer of a test run finishes it
    if rule.approvers and email.lower() not in rule.approvers:
        return Refusal("forbidden", "you are not among this approval's approvers")
    if not rule.allow_self and requested_by is not None and requested_by == user_id:
        return Refusal("forbidden", "you started this run, and this approval does not allow self-approval")
    return None


def outcome(decisions: Sequence[str], required: int, *, sole: bool = False) -> Decision | None:
    """The approval's resolution after ``decisions`` (in order), or ``None`` while it still waits.
    ``sole``: the last decision is a test run's own user's, which resolves it alone."""
    if "reject" in decisions:
        return "reject"
    approvals = decisions.count("approve")
    if approvals >= required or (sole and approvals > 0):
        return "approve"
    return None
