"""The size limits of a workflow definition and the codes of the problems validation reports."""

from __future__ import annotations

from typing import Final

from flowdeck.domain.definition import MAX_NODE_TIMEOUT_SECONDS, MAX_RUN_TIMEOUT_SECONDS

__all__ = (
    "ANALYSIS_FACTOR",
    "MAX_CYCLES_REPORTED",
    "MAX_DEFINITION_BYTES",
    "MAX_DEPTH",
    "MAX_EDGES",
    "MAX_LABEL_CHARS",
    "MAX_NODES",
    "MAX_NODE_TIMEOUT_SECONDS",
    "MAX_RETRY_ATTEMPTS",
    "MAX_RUN_TIMEOUT_SECONDS",
    "MAX_TITLE_CHARS",
    "PROBLEM_CODES",
)

MAX_NODES: Final = 500
MAX_EDGES: Final = 2000
MAX_DEPTH: Final = 100
MAX_DEFINITION_BYTES: Final = 1024 * 1024
ANALYSIS_FACTOR: Final = 4
MAX_CYCLES_REPORTED: Final = 50
MAX_LABEL_CHARS: Final = 500
MAX_TITLE_CHARS: Final = 200  # the workflows.title column, and what the API accepts
MAX_RETRY_ATTEMPTS: Final = 10

PROBLEM_CODES: Final = (
    "invalid_definition",
    "invalid_field",
    "missing_start",
    "multiple_starts",
    "missing_end",
    "duplicate_node_id",
    "duplicate_edge_id",
    "unknown_node_type",
    "edge_missing_node",
    "invalid_source_handle",
    "invalid_config",
    "cycle",
    "unreachable_node",
    "loop_body",
    "too_many_nodes",
    "too_many_edges",
    "too_deep",
    "too_large",
    "duplicate_output_variable",
    "unknown_variable",
    "unused_output",
    "invalid_note",
)
