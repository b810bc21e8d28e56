"""Configuration, read from the environment once (SPEC §10) and passed down explicitly."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace

from flowdeck.domain.retention import MAX_DAYS, MAX_RUNS, RetentionPolicy

__all__ = ("DEFAULT_DATABASE_URL", "Settings")

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./flowdeck.db"


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


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    secret_key: str = ""
    worker_concurrency: int = 16
    tenant_concurrency: int | None = None
    """FLOWDECK_TENANT_CONCURRENCY: running nodes of one tenant per worker (unset: half the worker's, at least 1)."""
    sandbox_workers: int = 2
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
    """``GET /metrics`` (Prometheus); FLOWDECK_METRICS=off turns it off."""
    metrics_port: int = 0
    """FLOWDECK_METRICS_PORT: where ``flowdeck worker`` serves its own ``/metrics`` (0: not at all)."""
    log_format: str = "text"
    """FLOWDECK_LOG_FORMAT: ``text`` for people, ``json`` (one object per line) for log collectors."""
    trusted_proxies: tuple[str, ...] = ()
    """Peers whose ``X-Forwarded-For``/``-Proto`` are believed (``FLOWDECK_TRUSTED_PROXIES``); none by default."""
    sqlite_synchronous: str = "FULL"
    """FLOWDECK_SQLITE_SYNCHRONOUS: ``FULL`` (every commit survives a power loss) or ``NORMAL`` (faster; a
    power loss may lose the last commits, never corrupt the database)."""
    db_pool_size: int = 20
    """FLOWDECK_DB_POOL_SIZE (PostgreSQL): connections one process keeps; ``serve --workers`` shares
    ``max_connections`` between its processes when it is unset (``serving.connection_share``)."""
    retention: RetentionPolicy = RetentionPolicy()  # noqa: RUF009 -- frozen: one shared default is safe
    """FLOWDECK_RETENTION_DAYS / _TEST_DAYS / _MAX_RUNS: the finished runs a tenant keeps unless it set its own
    (``/api/settings/retention``); 0 keeps forever (engine/pruning.py)."""
    serve_workers: int | None = None
    """FLOWDECK_SERVE_WORKERS: worker processes ``flowdeck serve`` starts beside itself (unset: one per core
    beyond the first on PostgreSQL, none on SQLite; ``serving.serve_worker_count``)."""

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
            host=env.get("FLOWDECK_HOST") or "127.0.0.1",
            port=_int(env, "FLOWDECK_PORT", 8000),
            sqlite_dirs=_list(env, "FLOWDECK_SQLITE_DIRS", os.pathsep) or None,
            http_allow=_list(env, "FLOWDECK_HTTP_ALLOW", ","),
            shutdown_grace=_float(env, "FLOWDECK_SHUTDOWN_GRACE", 30.0),
            metrics=_choice(env, "FLOWDECK_METRICS", "on", ("on", "off")) == "on",
            metrics_port=_int(env, "FLOWDECK_METRICS_PORT", 0, minimum=0),
            log_format=_choice(env, "FLOWDECK_LOG_FORMAT", "text", ("text", "json")),
            trusted_proxies=_proxies(env, "FLOWDECK_TRUSTED_PROXIES"),
            sqlite_synchronous=_choice(env, "FLOWDECK_SQLITE_SYNCHRONOUS", "full", ("full", "normal")).upper(),
            serve_workers=_optional_int(env, "FLOWDECK_SERVE_WORKERS"),
            db_pool_size=_int(env, "FLOWDECK_DB_POOL_SIZE", 20),
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
