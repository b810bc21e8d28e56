"""How an app is put together: what ``create_app`` may be told beyond Settings (tests and the CLI use it)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from argon2 import PasswordHasher

from flowdeck.accounts.rate_limit import LoginLimits
from flowdeck.engine.engine import Engine
from flowdeck.engine.fanout import Transport
from flowdeck.queries.service import DataService
from flowdeck.settings import Settings
from flowdeck.storage.database import Database

__all__ = ("DEFAULT_STATIC_DIR", "MAX_BODY_BYTES", "ApiConfig", "ReadyInfo", "RuntimeFactory", "RuntimeLike")

MAX_BODY_BYTES = 1024 * 1024
DEFAULT_STATIC_DIR = Path(__file__).resolve().parents[3] / "static"
"""The editor build (``static/`` at the top of the repository)."""


class RuntimeLike(Protocol):
    """What the API uses of a running Flowdeck (``runtime.Runtime`` fits)."""

    @property
    def db(self) -> Database: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def data(self) -> DataService: ...


RuntimeFactory = Callable[[Settings], AbstractAsyncContextManager[RuntimeLike]]


@dataclass(frozen=True, slots=True)
class ReadyInfo:
    """Told to ``ApiConfig.on_ready`` once the app has started."""

    login_path: str | None = None
    """``/api/auth/link/<secret>``: a one-time login link, made on a database without users."""
    email: str | None = None
    password: str | None = None
    """The generated password of the first user (shown once, like the link)."""


@dataclass(frozen=True, slots=True)
class ApiConfig:
    runtime_factory: RuntimeFactory | None = None
    """Opens the database and engine; default ``runtime.open_runtime`` (migrating SQLite first)."""
    with_worker: bool = True
    password_hasher: PasswordHasher | None = None
    login_limits: LoginLimits = field(default_factory=LoginLimits)
    bootstrap_admin: bool = False
    """On a database without users, create one and announce a one-time login link (``flowdeck serve``)."""
    on_ready: Callable[[ReadyInfo], None] | None = None
    static_dir: Path = DEFAULT_STATIC_DIR
    max_body_bytes: int = MAX_BODY_BYTES
    live_check_seconds: float = 30.0
    """How often open Socket.IO connections' credentials are checked for expiry (revocation is immediate)."""
    fanout_transport: Transport | None = None
    """What joins this process's live updates to other processes' instead of what the settings choose
    (``flowdeck serve --workers N`` on SQLite without Redis: its pipes to the worker processes)."""
