"""Data sources, saved queries and the query engine behind the ``dataQuery`` node (SPEC §6).

Modules: ``models`` (records), ``errors``, ``secrets`` (encryption at rest), ``validation`` (what may
be saved), ``placeholders`` (HTTP templates), ``values`` (JSON-safe results), ``sql_runner``,
``sqlerrors`` and ``http_runner`` (running), ``engine`` (the ``QueryEngine``) and ``service`` (the API
the REST layer calls, and ``run_saved_query`` for the ``dataQuery`` node).
"""

from __future__ import annotations

__all__: tuple[str, ...] = ()
