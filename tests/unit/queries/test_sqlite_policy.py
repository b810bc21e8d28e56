"""What a refused SQLite data source is told: the directories as the operator set them, never the server's own paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from flowdeck.queries.sql_guard import SourceRefusedError, SqlitePolicy


def test_a_refusal_names_the_configured_directories_not_resolved_or_internal_ones(tmp_path: Path) -> None:
    real = tmp_path / "real-data"
    real.mkdir()
    link = tmp_path / "data"
    link.symlink_to(real)
    package = tmp_path / "site-packages" / "flowdeck" / "examples" / "data"
    package.mkdir(parents=True)
    policy = SqlitePolicy.create([str(link)], read_only=[str(package)])

    with pytest.raises(SourceRefusedError) as refused:
        policy.file_of(make_url("sqlite+aiosqlite:////etc/x.db"))
    message = str(refused.value)
    assert message.startswith("/etc/x.db is outside") and f"FLOWDECK_SQLITE_DIRS: {link}" in message
    assert str(real) not in message and "site-packages" not in message  # no symlink target, no package path
    assert policy.shown_directories == (str(link),)


def test_with_the_setting_unset_the_refusal_says_so_without_any_path(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "examples"
    package.mkdir(parents=True)
    policy = SqlitePolicy.create(None, read_only=[str(package)])
    with pytest.raises(SourceRefusedError) as refused:
        policy.file_of(make_url("sqlite+aiosqlite:////srv/orders.db"))
    assert "FLOWDECK_SQLITE_DIRS is not set" in str(refused.value) and str(tmp_path) not in str(refused.value)
