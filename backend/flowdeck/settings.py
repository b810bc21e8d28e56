"""Configuration, read from the environment once (SPEC §10) and passed down explicitly."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace

from flowdeck.domain.retention import MAX_DAYS, MAX_RUNS, RetentionPolicy

__all__ = (
    "DEFAULT_DATABASE_URL",
    "DEFAULT_MAX_RUN_BYTES",
    "DEFAULT_MAX_WAIT_SECONDS",
    "METRICS_LISTENER_VARIABLES",
    "Settings",
)

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./flowdeck.db"
DEFAULT_MAX_WAIT_SECONDS = 30 * 24 * 3600
"""FLOWDECK_MAX_WAIT_SECONDS' default: the longest ``timeoutSeconds`` of a ``wait`` node (30 days)."""
METRICS_LISTENER_VARIABLES = ("FLOWDECK_METRICS_ADDR", "FLOWDECK_METRICS_PORT")
"""Left out of the environment of the worker processes a command starts: each would bind the same address."""
DEFAULT_MAX_RUN_BYTES = 64 * 1024 * 1024


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def _at_most(name: str, value: int, maximum: int) -> int:
    if value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def _optional_int(env: Mapping[str, str], name: str) -> int | None:
    """A count of at least 0, or ``None`` when unset (the default is decided where it is used)."""
    return None if (env.get(name) or "").strip() == "" else _int(env, name, 0, minimum=0)


def _list(env: Mapping[str, str], name: str, separator: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in (env.get(name) or "").split(separator) if part.strip())


def _float(env: Mapping[str, str], name: str, default: float, minimum: float = 0.0) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value >= minimum or value == float("inf"):
        raise ValueError(f"{name} must be at least {minimum:g} (and finite), got {raw!r}")
    return value


def _sandbox_ceiling(env: Mapping[str, str]) -> int | None:
    ceiling = _optional_int(env, "FLOWDECK_SANDBOX_MAX_WORKERS")
    floor = _int(env, "FLOWDECK_SANDBOX_WORKERS", 2)
    if ceiling is not None and ceiling < floor:
        raise ValueError(
            f"FLOWDECK_SANDBOX_MAX_WORKERS ({ceiling}) must be at least FLOWDECK_SANDBOX_WORKERS ({floor})"
        )
    return ceiling


def _choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = (env.get(name) or default).strip().lower()
    if raw not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {env.get(name)!r}")
    return raw


def _proxies(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """Comma-separated addresses and CIDRs (``10.0.0.0/8, ::1``), each checked."""
    found = []
    for item in (env.get(name) or "").split(","):
        item = item.strip()
        if not item:
            continue
        try:
            found.append(str(ipaddress.ip_network(item, strict=False) if "/" in item else ipaddress.ip_address(item)))
        except ValueError:
            raise ValueError(f"{name}: {item!r} is neither an IP address nor a CIDR") from None
    return tuple(found)


def _metrics_addr(env: Mapping[str, str]) -> tuple[str, int] | None:
    """FLOWDECK_METRICS_ADDR (``host:port``, ``[::1]:9464``), or the older FLOWDECK_METRICS_PORT (on FLOWDECK_HOST)."""
    raw = (env.get("FLOWDECK_METRICS_ADDR") or "").strip()
    port_only = _int(env, "FLOWDECK_METRICS_PORT", 0, minimum=0)
    if raw and port_only:
        raise ValueError("set FLOWDECK_METRICS_ADDR or the older FLOWDECK_METRICS_PORT, not both")
    if not raw:
        return (env.get("FLOWDECK_HOST") or "127.0.0.1", port_only) if port_only else None
    host, _, port = raw.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535 or any(c in host for c in "/[] "):
        raise ValueError(f"FLOWDECK_METRICS_ADDR must be host:port (e.g. 127.0.0.1:9464), got {raw!r}")
    return host, int(port)


def _metrics_token(env: Mapping[str, str]) -> str | None:
    raw = env.get("FLOWDECK_METRICS_TOKEN") or ""
    if raw and (len(raw) < 16 or any(c.isspace() for c in raw)):
        raise ValueError("FLOWDECK_METRICS_TOKEN must be at least 16 characters, without spaces")
    return raw or None


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    secret_key: str = ""
    worker_concurrency: int = 16
    tenant_concurrency: int | None = None
    """FLOWDECK_TENANT_CONCURRENCY: running nodes of one tenant per worker (unset: half the worker's, at least 1)."""
    sandbox_workers: int = 2
    """FLOWDECK_SANDBOX_WORKERS: sandbox processes kept running (the floor), and the most one tenant holds."""
    sandbox_max_workers: int | None = None
    """FLOWDECK_SANDBOX_MAX_WORKERS: the most sandbox processes, grown for tenants that wait while others hold
    every process (unset: FLOWDECK_SANDBOX_WORKERS + 4)."""
    sandbox_idle_seconds: float = 30.0
    """FLOWDECK_SANDBOX_IDLE_SECONDS: how long a grown sandbox process may stay idle before it stops."""
    host: str = "127.0.0.1"
    port: int = 8000
    lease_seconds: float = 30.0
    """FLOWDECK_LEASE_SECONDS: how long a claimed job stays leased without a heartbeat (serve and worker)."""
    poll_interval_seconds: float = 0.5
    sqlite_dirs: tuple[str, ...] | None = None
    """``FLOWDECK_SQLITE_DIRS`` (os.pathsep-separated): where SQLite data sources may open files; unset: nowhere."""
    http_allow: tuple[str, ...] = ()
    """``FLOWDECK_HTTP_ALLOW`` (comma-separated hosts, addresses, CIDRs) users' requests may reach anyway."""
    shutdown_grace: float = 30.0
    """FLOWDECK_SHUTDOWN_GRACE: on SIGTERM/SIGINT, seconds the running nodes may take to finish."""
    metrics: bool = True
    """Prometheus metrics at all; FLOWDECK_METRICS=off turns every way of reading them off."""
    metrics_addr: tuple[str, int] | None = None
    """FLOWDECK_METRICS_ADDR (host, port): a listener of its own for ``/metrics``, in ``serve`` and ``worker``
    (FLOWDECK_METRICS_PORT, the older name, means FLOWDECK_HOST:port)."""
    metrics_token: str | None = None
    """FLOWDECK_METRICS_TOKEN: the bearer token that reads ``/metrics`` on the app's port (unset: 404 there)."""
    log_format: str = "text"
    """FLOWDECK_LOG_FORMAT: ``text`` for people, ``json`` (one object per line) for log collectors."""
    trusted_proxies: tuple[str, ...] = ()
    """Peers whose ``X-Forwarded-For``/``-Proto`` are believed (``FLOWDECK_TRUSTED_PROXIES``); none by default."""
    sqlite_synchronous: str = "FULL"
    """FLOWDECK_SQLITE_SYNCHRONOUS: ``FULL`` (every commit survives a power loss) or ``NORMAL`` (faster; a
    power loss may lose the last commits, never corrupt the database)."""
    db_pool_size: int = 20
    """FLOWDECK_DB_POOL_SIZE (PostgreSQL): pooled connections ``serve`` (HTTP and its embedded worker),
    ``run`` and ``bench`` keep at most; each process holds 2 more for LISTEN/NOTIFY (docs/operations.md
    "How many connections")."""
    worker_db_pool_size: int = 4
    """FLOWDECK_WORKER_DB_POOL_SIZE (PostgreSQL): pooled connections a ``flowdeck worker`` process keeps at
    most (it serves no HTTP: its nodes' decisions hold one for a millisecond or two); ``serve --workers``
    gives its children less when ``max_connections`` cannot take that many (``serving.connection_share``)."""
    db_application_name: str = "flowdeck"
    """The ``application_name`` of this process's PostgreSQL connections (``flowdeck-serve``,
    ``flowdeck-worker``): who holds which connection in ``pg_stat_activity``."""
    db_reconnect_seconds: float = 15.0
    """FLOWDECK_DB_RECONNECT_SECONDS (PostgreSQL): how long a statement waits for PostgreSQL to take
    connections again (a restart, a failover) before it fails (the API answers 503)."""
    max_tree_runs: int = 1000
    """FLOWDECK_MAX_TREE_RUNS: runs in one tree of sub-workflow calls, the run nobody called included."""
    max_wait_seconds: int = DEFAULT_MAX_WAIT_SECONDS
    """FLOWDECK_MAX_WAIT_SECONDS: the longest ``timeoutSeconds`` a ``wait`` node may have (at most 31 days,
    the longest run)."""
    tenant_active_runs: int = 10_000
    """FLOWDECK_TENANT_ACTIVE_RUNS: a tenant's PENDING and RUNNING runs; a start past it is refused (429)."""
    retention: RetentionPolicy = RetentionPolicy()  # noqa: RUF009 -- frozen: one shared default is safe
    """FLOWDECK_RETENTION_DAYS / _TEST_DAYS / _MAX_RUNS: the finished runs a tenant keeps unless it set its own
    (``/api/settings/retention``); 0 keeps forever (engine/pruning.py)."""
    serve_workers: int | None = None
    """FLOWDECK_SERVE_WORKERS: worker processes ``flowdeck serve`` starts beside itself (unset: one per core
    beyond the first on PostgreSQL, none on SQLite; ``serving.serve_worker_count``)."""
    max_run_bytes: int = DEFAULT_MAX_RUN_BYTES
    """FLOWDECK_MAX_RUN_BYTES: the bytes of output one run may store (node outputs, loop items, the end's
    output, as JSON); the node whose output would go past it fails (engine/run_budget.py)."""
    max_run_labels: int = 10
    """FLOWDECK_MAX_RUN_LABELS: labels one run may carry (domain/labels.py)."""
    max_label_chars: int = 200
    """FLOWDECK_MAX_LABEL_CHARS: characters of one label's value (at most 1000: values are indexed)."""
    priority_step_seconds: float = 1.0
    """FLOWDECK_PRIORITY_STEP_SECONDS: the seconds of waiting one point of priority is worth in a flow-control
    queue (engine/flow_control.py) and in the claim of a tenant's due node jobs (storage/statements.py): a run
    of priority 60 goes before one of 50 that became ready up to 10 steps earlier."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(
            database_url=env.get("FLOWDECK_DATABASE_URL") or DEFAULT_DATABASE_URL,
            redis_url=env.get("FLOWDECK_REDIS_URL") or None,
            secret_key=env.get("FLOWDECK_SECRET_KEY") or "",
            worker_concurrency=_int(env, "FLOWDECK_WORKER_CONCURRENCY", 16),
            tenant_concurrency=_int(env, "FLOWDECK_TENANT_CONCURRENCY", 0) or None,
            lease_seconds=_float(env, "FLOWDECK_LEASE_SECONDS", 30.0, minimum=1.0),
            sandbox_workers=_int(env, "FLOWDECK_SANDBOX_WORKERS", 2),
            sandbox_max_workers=_sandbox_ceiling(env),
            sandbox_idle_seconds=_float(env, "FLOWDECK_SANDBOX_IDLE_SECONDS", 30.0, minimum=0.1),
            host=env.get("FLOWDECK_HOST") or "127.0.0.1",
            port=_int(env, "FLOWDECK_PORT", 8000),
            sqlite_dirs=_list(env, "FLOWDECK_SQLITE_DIRS", os.pathsep) or None,
            http_allow=_list(env, "FLOWDECK_HTTP_ALLOW", ","),
            shutdown_grace=_float(env, "FLOWDECK_SHUTDOWN_GRACE", 30.0),
            metrics=_choice(env, "FLOWDECK_METRICS", "on", ("on", "off")) == "on",
            metrics_addr=_metrics_addr(env),
            metrics_token=_metrics_token(env),
            log_format=_choice(env, "FLOWDECK_LOG_FORMAT", "text", ("text", "json")),
            trusted_proxies=_proxies(env, "FLOWDECK_TRUSTED_PROXIES"),
            sqlite_synchronous=_choice(env, "FLOWDECK_SQLITE_SYNCHRONOUS", "full", ("full", "normal")).upper(),
            serve_workers=_optional_int(env, "FLOWDECK_SERVE_WORKERS"),
            db_pool_size=_int(env, "FLOWDECK_DB_POOL_SIZE", 20),
            worker_db_pool_size=_int(env, "FLOWDECK_WORKER_DB_POOL_SIZE", 4),
            db_reconnect_seconds=_float(env, "FLOWDECK_DB_RECONNECT_SECONDS", 15.0),
            max_run_bytes=_int(env, "FLOWDECK_MAX_RUN_BYTES", DEFAULT_MAX_RUN_BYTES, minimum=1024),
            max_tree_runs=_int(env, "FLOWDECK_MAX_TREE_RUNS", 1000),
            tenant_active_runs=_int(env, "FLOWDECK_TENANT_ACTIVE_RUNS", 10_000),
            max_wait_seconds=_at_most(
                "FLOWDECK_MAX_WAIT_SECONDS",
                _int(env, "FLOWDECK_MAX_WAIT_SECONDS", DEFAULT_MAX_WAIT_SECONDS, minimum=1),
                31 * 24 * 3600,
            ),
            max_run_labels=_int(env, "FLOWDECK_MAX_RUN_LABELS", 10, minimum=0),
            max_label_chars=_at_most("FLOWDECK_MAX_LABEL_CHARS", _int(env, "FLOWDECK_MAX_LABEL_CHARS", 200), 1000),
            priority_step_seconds=_float(env, "FLOWDECK_PRIORITY_STEP_SECONDS", 1.0, minimum=0.0),
            retention=RetentionPolicy(
                max_age_days=_at_most("FLOWDECK_RETENTION_DAYS", _int(env, "FLOWDECK_RETENTION_DAYS", 30, 0), MAX_DAYS),
                test_max_age_days=_at_most(
                    "FLOWDECK_RETENTION_TEST_DAYS", _int(env, "FLOWDECK_RETENTION_TEST_DAYS", 7, 0), MAX_DAYS
                ),
                max_runs=_at_most(
                    "FLOWDECK_RETENTION_MAX_RUNS", _int(env, "FLOWDECK_RETENTION_MAX_RUNS", 100_000, 0), MAX_RUNS
                ),
            ),
        )

    def with_generated_secret(self) -> Settings:
        """A settings copy with a random secret when none was configured (single-process dev use)."""
        return self if self.secret_key else replace(self, secret_key=secrets.token_urlsafe(32))

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
