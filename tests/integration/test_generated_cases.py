"""Generated cases kept as tests (tests/integration/test_generated_equivalence.py prints them)."""

from pathlib import Path

from tests.integration.test_generated_equivalence import Example, assert_all_paths_agree


async def test_a_late_result_of_a_cancelled_child_leaves_the_next_childs_job_alone(
    equivalence_url: str, tmp_path: Path
) -> None:
    """SQLite reuses a deleted job's id: the late result of a cancelled child's end node deleted, by (id,
    attempt), the retry job of the next child, which then never ran. Deletes now match the job's node too."""
    example = Example(
        workflow={
            "title": "test",
            "nodes": [
                {"id": "start", "type": "start", "config": {}},
                {
                    "id": "call1",
                    "type": "workflow",
                    "config": {"workflowId": "{{child}}", "input": {"n": "{{ ctx.input.n }}"}},
                },
                {"id": "wait2", "type": "wait", "config": {"resumeOn": "webhook", "timeoutSeconds": 600}},
                {"id": "end", "type": "end", "config": {"outputParameters": {"n": "{{ ctx.input.n }}"}}},
            ],
            "edges": [
                {"id": "start-call1-d", "source": "start", "target": "call1"},
                {"id": "call1-wait2-success", "source": "call1", "target": "wait2", "sourceHandle": "success"},
                {"id": "wait2-end-success", "source": "wait2", "target": "end", "sourceHandle": "success"},
            ],
        },
        child={
            "title": "child",
            "nodes": [
                {"id": "start", "type": "start", "config": {}},
                {
                    "id": "work",
                    "type": "step",
                    "config": {"failTimes": 1},
                    "retry": {"maxAttempts": 2, "backoffSeconds": 0},
                },
                {
                    "id": "end",
                    "type": "end",
                    "config": {"outputParameters": {"twice": "{{ ctx.input.n * 2 }}"}},
                },
            ],
            "edges": [
                {"id": "start-work-d", "source": "start", "target": "work"},
                {"id": "work-end-d", "source": "work", "target": "end"},
            ],
        },
        run_input={"n": 5},
        schedule=[
            ("duplicate", 0),
            ("together", 3),
            ("together", 4),
            ("one", 3),
            ("takeover", 0),
            ("resume", 3),
            ("takeover", 5),
        ],
    )
    await assert_all_paths_agree(example, equivalence_url, tmp_path)


async def test_a_wait_in_a_loop_taken_over_before_it_parked_shows_a_url_that_resumes_it(
    equivalence_url: str, tmp_path: Path
) -> None:
    """An iteration's wait token is made when the node first runs and shown when it parks. The holder that
    made it stopped before parking (taken over): the next attempt parked showing no URL, and nobody could
    resume the iteration (the driver found no URL to call). Such a token, never shown, is now replaced."""
    example = Example(
        workflow={
            "title": "test",
            "nodes": [
                {"id": "start", "type": "start", "config": {}},
                {"id": "loop1", "type": "loop", "config": {"items": [0], "concurrency": 1}},
                {"id": "wait2", "type": "wait", "config": {"resumeOn": "webhook", "timeoutSeconds": 600}},
                {"id": "end", "type": "end", "config": {"outputParameters": {"n": "{{ ctx.input.n }}"}}},
            ],
            "edges": [
                {"id": "start-loop1-d", "source": "start", "target": "loop1"},
                {"id": "loop1-wait2-loop", "source": "loop1", "target": "wait2", "sourceHandle": "loop"},
                {"id": "loop1-end-done", "source": "loop1", "target": "end", "sourceHandle": "done"},
            ],
        },
        child=None,
        run_input={"n": 1},
        schedule=[("one", 0), ("one", 0), ("takeover", 0), ("resume", 0)],
        priority=50,
    )
    await assert_all_paths_agree(example, equivalence_url, tmp_path)


async def test_a_failed_run_cancels_its_children_in_the_order_it_called_them(
    equivalence_url: str, tmp_path: Path
) -> None:
    """Two children still retrying when their caller fails fast: PostgreSQL handed the cascade its children in
    no particular order (the second child's rows came first), SQLite in creation order. Children are now
    cancelled in the order they were called, on every path."""
    child_call = {"workflowId": "{{child}}", "input": {"n": "{{ ctx.input.n }}"}}
    example = Example(
        workflow={
            "title": "test",
            "nodes": [
                {"id": "start", "type": "start", "config": {}},
                {"id": "join1", "type": "step", "config": {}, "joinMode": "all"},
                {"id": "call2", "type": "workflow", "config": child_call},
                {
                    "id": "s3",
                    "type": "step",
                    "config": {"failTimes": 1},
                    "retry": {"maxAttempts": 1, "backoffSeconds": 0},
                    "errorHandling": "continue",
                },
                {"id": "call4", "type": "workflow", "config": child_call},
                {"id": "end", "type": "end", "config": {"outputParameters": {"n": "{{ ctx.input.n }}"}}},
            ],
            "edges": [
                {"id": "start-call2-d", "source": "start", "target": "call2"},
                {"id": "call2-join1-success", "source": "call2", "target": "join1", "sourceHandle": "success"},
                {"id": "start-s3-d", "source": "start", "target": "s3"},
                {"id": "s3-join1-d", "source": "s3", "target": "join1"},
                {"id": "start-call4-d", "source": "start", "target": "call4"},
                {"id": "call4-join1-success", "source": "call4", "target": "join1", "sourceHandle": "success"},
                {"id": "join1-end-d", "source": "join1", "target": "end"},
            ],
        },
        child={
            "title": "child",
            "nodes": [
                {"id": "start", "type": "start", "config": {}},
                {
                    "id": "work",
                    "type": "step",
                    "config": {"failTimes": 1},
                    "retry": {"maxAttempts": 2, "backoffSeconds": 0},
                },
                {"id": "end", "type": "end", "config": {"outputParameters": {"twice": "{{ ctx.input.n * 2 }}"}}},
            ],
            "edges": [
                {"id": "start-work-d", "source": "start", "target": "work"},
                {"id": "work-end-d", "source": "work", "target": "end"},
            ],
        },
        run_input={"n": 0},
        schedule=[],
        priority=50,
    )
    await assert_all_paths_agree(example, equivalence_url, tmp_path)


async def test_the_paused_holders_late_result_goes_on_with_the_node_it_is_leased(
    equivalence_url: str, tmp_path: Path
) -> None:
    """A takeover whose paused holder's late result (the resumed wait's) leased it the next node: the driver
    dropped that node, and the run sat RUNNING with nothing due (a worker goes on with what it is leased)."""
    example = Example(
        workflow={
            "title": "test",
            "nodes": [
                {"id": "start", "type": "start", "config": {}},
                {"id": "wait1", "type": "wait", "config": {"resumeOn": "webhook", "timeoutSeconds": 600}},
                {"id": "s2", "type": "step", "config": {}},
                {"id": "s3", "type": "step", "config": {}},
                {"id": "end", "type": "end", "config": {"outputParameters": {"n": "{{ ctx.input.n }}"}}},
            ],
            "edges": [
                {"id": "start-wait1-d", "source": "start", "target": "wait1"},
                {"id": "wait1-s2-success", "source": "wait1", "target": "s2", "sourceHandle": "success"},
                {"id": "s2-s3-d", "source": "s2", "target": "s3"},
                {"id": "s3-end-d", "source": "s3", "target": "end"},
            ],
        },
        child=None,
        run_input={"n": 0},
        schedule=[("one", 0), ("one", 0), ("one", 0), ("duplicate", 0), ("takeover", 0)],
        priority=50,
    )
    await assert_all_paths_agree(example, equivalence_url, tmp_path)
