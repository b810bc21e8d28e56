"""Schedules (SPEC §8): ``options.schedules: [{cron, timezone?, input?}]`` of a saved workflow.

A schedule's due times are the minutes its 5-field cron expression matches, read in its IANA time zone
(default UTC), so ``0 9 * * *`` in ``Europe/Paris`` is 09:00 Paris time all year round. Validation
reports every problem at once, with paths like ``options.schedules[0].cron``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from flowdeck.domain.problems import Problem

__all__ = (
    "DEFAULT_TIMEZONE",
    "MAX_SCHEDULES",
    "Schedule",
    "parse_schedules",
    "schedule_problems",
)

MAX_SCHEDULES: Final = 20
DEFAULT_TIMEZONE: Final = "UTC"
_KEYS: Final = frozenset({"cron", "timezone", "input"})
_MAX_CRON_CHARS: Final = 200
_MAX_TZ_CHARS: Final = 64


@lru_cache(maxsize=512)
def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # unknown, or not a valid key (``../x``)
        return None


def _cron_error(cron: Any) -> str | None:
    """Why ``cron`` is not a 5-field cron expression, or ``None``."""
    if not isinstance(cron, str) or not cron.strip():
        return "must be a 5-field cron expression such as '*/15 * * * *'"
    if len(cron) > _MAX_CRON_CHARS:
        return f"must be at most {_MAX_CRON_CHARS} characters"
    fields = cron.split()
    if len(fields) != 5:
        return f"must have 5 fields (minute hour day-of-month month day-of-week), not {len(fields)}"
    try:
        croniter(cron)
    except (ValueError, KeyError, TypeError) as exc:  # croniter's errors derive from ValueError
        return f"is not a valid cron expression ({exc})"
    return None


@dataclass(frozen=True, slots=True)
class Schedule:
    """One valid schedule: its position in ``options.schedules``, cron expression, zone and run input."""

    index: int
    cron: str
    timezone: str
    input: Any

    def previous_due(self, now: float) -> float:
        """The latest due time at or before ``now`` (epoch seconds)."""
        zone = _zone(self.timezone) or UTC
        before = float(croniter(self.cron, datetime.fromtimestamp(now, zone)).get_prev(float))  # strictly before
        after = self.next_due(before)
        return after if after <= now else before  # ``now`` itself may be a due time

    def next_due(self, now: float) -> float:
        """The first due time strictly after ``now`` (epoch seconds)."""
        zone = _zone(self.timezone) or UTC
        return float(croniter(self.cron, datetime.fromtimestamp(now, zone)).get_next(float))


def schedule_problems(schedules: list[Any]) -> list[Problem]:
    """Every problem of ``options.schedules`` (already known to be a list of objects)."""
    problems: list[Problem] = []
    if len(schedules) > MAX_SCHEDULES:
        message = f"a workflow has at most {MAX_SCHEDULES} schedules, not {len(schedules)}"
        problems.append(Problem("invalid_schedule", message, path="options.schedules"))
    for index, raw in enumerate(schedules):
        where = f"options.schedules[{index}]"
        if not isinstance(raw, dict):
            problems.append(Problem("invalid_schedule", f"{where} must be an object", path=where))
            continue
        for key in sorted(set(raw) - _KEYS, key=str):
            message = f"{where}: unknown key {key!r} (a schedule has cron, timezone and input)"
            problems.append(Problem("invalid_schedule", message, path=f"{where}.{key}"))
        if "cron" not in raw:
            problems.append(Problem("invalid_schedule", f"{where}.cron is required", path=f"{where}.cron"))
        else:
            error = _cron_error(raw["cron"])
            if error is not None:
                problems.append(Problem("invalid_schedule", f"{where}.cron {error}", path=f"{where}.cron"))
        zone = raw.get("timezone", DEFAULT_TIMEZONE)
        if not isinstance(zone, str) or len(zone) > _MAX_TZ_CHARS or _zone(zone) is None:
            message = f"{where}.timezone must be an IANA time zone name such as 'Europe/Paris', not {zone!r:.80}"
            problems.append(Problem("invalid_schedule", message, path=f"{where}.timezone"))
    return problems


def parse_schedules(definition: Any) -> list[Schedule]:
    """The valid schedules of a stored definition (an invalid one is left out, never raised)."""
    options = definition.get("options") if isinstance(definition, dict) else None
    raw = options.get("schedules") if isinstance(options, dict) else None
    if not isinstance(raw, list):
        return []
    schedules = []
    for index, item in enumerate(raw[:MAX_SCHEDULES]):
        if isinstance(item, dict) and not schedule_problems([item]):
            schedules.append(Schedule(index, item["cron"], item.get("timezone", DEFAULT_TIMEZONE), item.get("input")))
    return schedules
