"""Every path of the engine writes the same rows for generated workflows and delivery orders.

The engine's rules live in Python (engine/decision.py) and, for PostgreSQL's one-statement path, again
in SQL (storage/statements_postgres.py, storage/chain_batches.py). Hypothesis draws a workflow (chains,
fan-outs joined ``all``/``any``, conditions taking either handle, ``error`` edges, steps failing and
retried or not, each ``errorHandling``, loops nested two deep with concurrency 1-4, calls of a child
workflow, delays, ``wait`` nodes) and a schedule (which ready result is decided next, several of one
run at once, a result delivered twice, every lease running out with a paused holder's result arriving
late, which wait is resumed). Each example runs on:

- SQLite (the portable path),
- SQLite with its steps (a chain's step without the general decision: storage/state_sqlite.py),
- PostgreSQL, portable (``Database(url, one_statement=False)``),
- PostgreSQL, one statement, one run (a chain step goes alone),
- PostgreSQL, one statement, three runs in lockstep (their chain steps go to the store together: the
  batched ``unnest`` statement of storage/chain_batches.py takes them),

and after every step every row of every run-scoped table (instance, log, jobs, join and loop counters,
wait tokens, labels, notices), the jobs handed back and the announcements must be the same, ids
normalised; log rows and announcements in their order within each run (the order between two runs' rows
is no rule: a failed run's children are cancelled by a task of their own while its late results
arrive). A failure shrinks to a small graph and schedule and prints them as a test to paste here.

``FLOWDECK_EQUIVALENCE_EXAMPLES=N`` runs N examples (CI: a bounded number, about two minutes here).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.support.equivalence import EnginePath, first_difference, run_example
from tests.support.generated_workflows import Example, examples, render_test_case
from tests.support.graphs import linear

EXAMPLES = int(os.environ.get("FLOWDECK_EQUIVALENCE_EXAMPLES", "30"))


def _paths(postgres_url: str, sqlite_url: str) -> list[EnginePath]:
    return [
        EnginePath("SQLite", sqlite_url, one_statement=False),
        EnginePath("SQLite steps", sqlite_url.removesuffix(".db") + "-steps.db", one_statement=True),
        EnginePath("PostgreSQL portable", postgres_url, one_statement=False),
        EnginePath("PostgreSQL one statement", postgres_url, one_statement=True),
        EnginePath("PostgreSQL one statement, 3 runs batched", postgres_url, one_statement=True, copies=3),
    ]


async def assert_all_paths_agree(example: Example, postgres_url: str, tmp_path: Path) -> int:
    """Run ``example`` on every path and compare; returns the largest chain-step batch seen."""
    sqlite = tmp_path / f"equivalence-{os.urandom(4).hex()}.db"
    paths = _paths(postgres_url, f"sqlite+aiosqlite:///{sqlite}")
    try:
        reference, *_ = await run_example(example, paths[0])
        largest = 0
        for path in paths[1:]:
            for n, trace in enumerate(await run_example(example, path)):
                name = path.name if path.copies == 1 else f"{path.name} (run {n + 1})"
                largest = max(largest, trace.chain_batch_largest)
                assert trace.steps == reference.steps, first_difference(trace, reference, (name, paths[0].name))
    finally:
        for leftover in tmp_path.glob(f"{sqlite.stem}*"):  # both SQLite paths' files and their side files
            leftover.unlink(missing_ok=True)
    return largest


@pytest.mark.timeout(
    0 if "FLOWDECK_EQUIVALENCE_EXAMPLES" in os.environ else 1200
)  # a hang guard: a loaded machine is 10x slower
def test_every_path_writes_the_same_rows_for_generated_workflows(equivalence_url: str, tmp_path: Path) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
        print_blob=True,
    )
    @given(example=examples())
    def check(example: Example) -> None:
        try:
            asyncio.run(assert_all_paths_agree(example, equivalence_url, tmp_path))
        except Exception as exc:  # a difference, or the driver failing on a path (no URL to resume, say)
            message = f"{type(exc).__name__}: {exc}\n\nTo replay it, paste this test:\n\n{render_test_case(example)}"
            raise AssertionError(message) from exc

    check()


async def test_the_batched_chain_step_statement_is_among_the_compared(equivalence_url: str, tmp_path: Path) -> None:
    """Three runs of a chain in lockstep: their chain steps reach PostgreSQL in one statement."""
    example = Example(linear(4), None, {"n": 1}, [])
    assert await assert_all_paths_agree(example, equivalence_url, tmp_path) >= 2
