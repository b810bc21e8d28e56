"""The schema, as SQLAlchemy Core tables (Core, not ORM: the engine's hot path counts statements).

Times are epoch seconds (double precision) on both SQLite and PostgreSQL: portable, indexable and
cheap to compare in the job-claim query.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

__all__ = (
    "instance_logs",
    "instances",
    "join_barriers",
    "loop_states",
    "metadata",
    "node_jobs",
    "run_flow",
    "run_labels",
    "tenants",
    "wait_tokens",
    "workflow_versions",
    "workflows",
)

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

Json = sa.JSON().with_variant(JSONB(), "postgresql")
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite autoincrement needs INTEGER PRIMARY KEY
Id = sa.String(36)
Epoch: sa.Double[float] = sa.Double()

tenants = sa.Table(
    "tenants",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("created_at", Epoch, nullable=False),
)

workflows = sa.Table(
    "workflows",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("title", sa.String(200), nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("latest_version", sa.Integer, nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("updated_at", Epoch, nullable=False),
    sa.Column("deleted_at", Epoch, nullable=True),
    sa.Index(None, "tenant_id", "updated_at"),
)

workflow_versions = sa.Table(
    "workflow_versions",
    metadata,
    sa.Column("workflow_id", Id, sa.ForeignKey("workflows.id"), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("definition", Json, nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("author", sa.String(320), nullable=True),  # the saving user's email
    sa.Column("message", sa.String(500), nullable=True),  # optional, given on save
)

instances = sa.Table(
    "instances",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("workflow_id", Id, nullable=True),
    sa.Column("workflow_version", sa.Integer, nullable=True),
    sa.Column("is_test", sa.Boolean, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("trigger", sa.String(16), nullable=False),
    sa.Column("input", Json, nullable=True),
    sa.Column("output", Json, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("started_at", Epoch, nullable=True),
    sa.Column("completed_at", Epoch, nullable=True),
    sa.Column("updated_at", Epoch, nullable=False),
    sa.Column("deadline_at", Epoch, nullable=True),
    sa.Column("sla_at", Epoch, nullable=True),  # when options.slaSeconds passes (engine/sla.py)
    sa.Column("sla_breached_at", Epoch, nullable=True),
    # Sub-workflows: the ``workflow`` node attempt that started this run (NULL when nothing called it),
    # and how deeply it is nested (0: nothing called it).
    sa.Column("parent_instance_id", Id, nullable=True),
    sa.Column("parent_node_id", sa.String(64), nullable=True),
    sa.Column("parent_iteration", sa.String(200), nullable=True),
    sa.Column("parent_attempt", sa.Integer, nullable=True),
    sa.Column("depth", sa.Integer, nullable=False, server_default="0"),
    # The bytes of output the run has stored, against FLOWDECK_MAX_RUN_BYTES (storage/run_bytes.py).
    sa.Column("output_bytes", sa.BigInteger, nullable=False, server_default="0"),
    # The run-tree budget (FLOWDECK_MAX_TREE_RUNS, storage/children.py): a called run's outermost caller
    # (NULL for a run nothing called), and on that root the number of runs its tree holds, itself included.
    sa.Column("root_instance_id", Id, nullable=True),
    sa.Column("tree_runs", sa.Integer, nullable=False, server_default="1"),
    # The user who started the run, or whose API token did (a called run: its caller's); NULL for a
    # webhook, schedule or error-workflow start. An approval's self-approval rule reads it.
    sa.Column("requested_by", Id, nullable=True),
    # The run list (storage/run_queries.py): each filter has an index that starts with the tenant and
    # ends in the list's order, so every page is an index range read newest first.
    # SQLite (no statistics) picks the index with the most equality columns that gives the whole order.
    sa.Index(None, "tenant_id", "created_at", "id"),
    sa.Index(None, "tenant_id", "status", "created_at", "id"),  # also counts active runs (engine/run_limits.py)
    sa.Index(None, "tenant_id", "workflow_id", "created_at", "id"),
    sa.Index(None, "tenant_id", "workflow_id", "status", "created_at", "id"),
    sa.Index(None, "tenant_id", "workflow_id", "is_test", "created_at", "id"),
    sa.Index(None, "tenant_id", "is_test", "created_at", "id"),
    sa.Index(None, "tenant_id", "trigger", "created_at", "id"),
    sa.Index(
        None,
        "parent_instance_id",
        "created_at",
        "id",
        sqlite_where=sa.text("parent_instance_id IS NOT NULL"),
        postgresql_where=sa.text("parent_instance_id IS NOT NULL"),
    ),
    sa.Index(None, "status", "deadline_at"),
    sa.Index(None, "status", "sla_at"),
    sa.Index(None, "parent_instance_id", "parent_node_id"),
)

# The append-only event log (SPEC §4): the single source of truth of every run.
instance_logs = sa.Table(
    "instance_logs",
    metadata,
    sa.Column("log_id", BigId, primary_key=True, autoincrement=True),
    sa.Column("instance_id", Id, nullable=False),
    sa.Column("node_id", sa.String(64), nullable=True),
    sa.Column("iteration", sa.String(200), nullable=False, server_default=""),
    sa.Column("event_type", sa.String(20), nullable=False),
    sa.Column("node_status", sa.String(16), nullable=True),
    sa.Column("output_variable", sa.String(64), nullable=True),
    sa.Column("payload", Json, nullable=True),
    sa.Column("error_message", sa.Text, nullable=True),
    sa.Column("node_attempt", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", Epoch, nullable=False),
    # Idempotency: a duplicate delivery of the same node event is a no-op (run-level rows have a NULL
    # node_id, and NULLs never collide in a unique index on either database).
    sa.Index(
        "uq_instance_logs_node_event",
        "instance_id",
        "node_id",
        "iteration",
        "event_type",
        "node_attempt",
        unique=True,
    ),
    sa.Index("ix_instance_logs_instance_log", "instance_id", "log_id"),
)

# Durable node jobs: the queue. A row exists while a node is waiting, leased or retrying.
# ``available_at`` doubles as the lease: claiming a job pushes it to now + lease, heartbeats push it
# further, so a job whose worker died simply becomes due again (seed 004).
node_jobs = sa.Table(
    "node_jobs",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("instance_id", Id, nullable=False),
    sa.Column("node_id", sa.String(64), nullable=False),
    sa.Column("iteration", sa.String(200), nullable=False, server_default=""),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("retry_base", sa.Integer, nullable=False, server_default="1"),
    sa.Column("available_at", Epoch, nullable=False),
    sa.Column("lease_owner", sa.String(64), nullable=True),
    sa.Column("created_at", Epoch, nullable=False),
    # The run's tenant: claims take tenants round-robin (fair share) through the index below.
    sa.Column("tenant_id", Id, nullable=False, server_default=""),
    # How many times a worker's lease on this job expired and another worker took it over.
    sa.Column("takeovers", sa.Integer, nullable=False, server_default="0"),
    # The run's priority (its run_flow row's, else 50): a tenant's due jobs are claimed in aged-priority
    # order (domain/flow_control.py ``aged_at``); a chain's next job keeps it, as it keeps tenant_id.
    sa.Column("priority", sa.Integer, nullable=False, server_default="50"),
    sa.Index("uq_node_jobs_node", "instance_id", "node_id", "iteration", unique=True),
    sa.Index("ix_node_jobs_available", "available_at"),
    sa.Index("ix_node_jobs_lease_owner", "lease_owner"),
    sa.Index("ix_node_jobs_tenant_available", "tenant_id", "available_at"),
)

# Join barriers: how many incoming edges of a multi-parent node are resolved and how many were taken.
# Updated in the same transaction as the log row that resolves the edge, so it never disagrees with it.
join_barriers = sa.Table(
    "join_barriers",
    metadata,
    sa.Column("instance_id", Id, primary_key=True),
    sa.Column("node_id", sa.String(64), primary_key=True),
    sa.Column("iteration", sa.String(200), primary_key=True),
    sa.Column("resolved_edges", sa.Integer, nullable=False),
    sa.Column("taken_edges", sa.Integer, nullable=False),
)

# Running loops: one row per loop node per scope it runs in, counting finished iterations in the
# same transactions as the log rows that finish them. Iterations start in item order, ``concurrency``
# at a time, so iteration ``finished + concurrency - 1`` is the one a finishing iteration starts.
loop_states = sa.Table(
    "loop_states",
    metadata,
    sa.Column("instance_id", Id, primary_key=True),
    sa.Column("node_id", sa.String(64), primary_key=True),
    sa.Column("iteration", sa.String(200), primary_key=True),
    sa.Column("item_count", sa.Integer, nullable=False),
    sa.Column("finished", sa.Integer, nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
)

# Run labels (domain/labels.py): the run's tenant and creation time are copied here so a label filter
# reads one index newest first, and joins each run by its id.
run_labels = sa.Table(
    "run_labels",
    metadata,
    sa.Column("instance_id", Id, primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("tenant_id", Id, nullable=False),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Index("ix_run_labels_tenant_name_value_created", "tenant_id", "name", "value", "created_at", "instance_id"),
)

wait_tokens = sa.Table(
    "wait_tokens",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),  # sha256 hex of the token: the token is never stored
    sa.Column("instance_id", Id, nullable=False),
    sa.Column("node_id", sa.String(64), nullable=False),
    sa.Column("iteration", sa.String(200), nullable=False),
    sa.Column("resume_on", sa.String(16), nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("until", Epoch, nullable=True),  # set when the node first parks: its timeout
    sa.Column("resumed_at", Epoch, nullable=True),
    sa.Column("resumed_by", sa.String(32), nullable=True),  # the resuming request's mark (api/replay.py)
    sa.Column("timed_out_at", Epoch, nullable=True),
    sa.Column("output", Json, nullable=True),
    sa.UniqueConstraint("instance_id", "node_id", "iteration"),
)

# Flow control (engine/flow_control.py): one row per production run of a workflow with options.concurrency or
# options.debounce. ``waiting`` says why a PENDING run has not begun ("concurrency": queued for a slot of its
# group; "debounce": held until ``ready_at`` unless a newer start replaces it); NULL once it may run, which is
# when it holds a slot of ``group_key`` until it ends. Queued runs are taken in ``ready_at`` order lifted by
# ``priority`` (FLOWDECK_PRIORITY_STEP_SECONDS per point above 50). A transition out of ``waiting`` is one
# conditional UPDATE, so exactly one process makes it.
run_flow = sa.Table(
    "run_flow",
    metadata,
    sa.Column("instance_id", Id, primary_key=True),
    sa.Column("workflow_id", Id, nullable=False),
    sa.Column("group_key", sa.String(200), nullable=True),  # NULL: the workflow has no options.concurrency
    sa.Column("debounce_key", sa.String(200), nullable=True),  # NULL: no options.debounce
    sa.Column("concurrency_limit", sa.Integer, nullable=True),
    sa.Column("strategy", sa.String(24), nullable=True),
    sa.Column("priority", sa.Integer, nullable=False, server_default="50"),
    sa.Column("waiting", sa.String(16), nullable=True),
    sa.Column("ready_at", Epoch, nullable=False),
    sa.Index(None, "workflow_id", "group_key"),
    sa.Index(None, "workflow_id", "debounce_key"),
    sa.Index(
        "ix_run_flow_waiting",
        "ready_at",
        sqlite_where=sa.text("waiting IS NOT NULL"),
        postgresql_where=sa.text("waiting IS NOT NULL"),
    ),
)
