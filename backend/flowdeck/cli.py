"""The ``flowdeck`` command (SPEC §10)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowdeck.settings import Settings

if TYPE_CHECKING:
    from flowdeck.api.config import ReadyInfo
    from flowdeck.handlers.base import NodeHandler
    from flowdeck.observability.listener import MetricsListener
    from flowdeck.runtime import Runtime

__all__ = ("main",)


_NOTICES = ("flowdeck.storage.migrate",)
"""Loggers whose INFO lines are shown without ``--verbose`` (one line: ``database migrated to …``)."""


def _configure_logging(verbose: bool, log_format: str) -> None:
    from flowdeck.observability.logs import configure_logging

    configure_logging(verbose=verbose, log_format=log_format, notices=_NOTICES)


def _shown_url(database_url: str) -> str:
    """The database URL as printed: its password, if any, masked."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(database_url).render_as_string(hide_password=True)
    except ArgumentError:
        return database_url


def _public_url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host  # noqa: S104 -- a bind-all address, shown as local
    return f"http://{shown}:{port}"


def _announce(url: str) -> Callable[[ReadyInfo], None]:
    def announce(info: ReadyInfo) -> None:
        print(f"Flowdeck is ready: open {url}/", flush=True)
        if info.login_path is not None:
            print("First start, no users yet: sign in with this one-time link (valid 24 hours):", flush=True)
            print(f"    {url}{info.login_path}", flush=True)
            print(f"or as {info.email} with the password {info.password}", flush=True)

    return announce


def _echo_line(line: str) -> None:
    """A worker process's line on stdout, whole (the relay threads of several children write at once)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from flowdeck.api.config import ApiConfig
    from flowdeck.app import build_app
    from flowdeck.observability.logs import uvicorn_log_config
    from flowdeck.serving import (
        DrainingServer,
        connection_share,
        pipes_to_children,
        serve_worker_count,
        serve_worker_processes,
    )

    settings = Settings.from_env()
    host = args.host or settings.host
    port = args.port or settings.port
    workers = serve_worker_count(settings, args.workers)
    settings = dataclasses.replace(settings, db_application_name="flowdeck-serve")
    worker_pool = connection_share(settings, workers)
    beside = f", {workers} worker process{'es' if workers != 1 else ''} beside it" if workers else ""
    print(f"Flowdeck is starting on http://{host}:{port}/ (database: {_shown_url(settings.database_url)}{beside})")
    if settings.metrics and settings.metrics_addr is not None:
        from flowdeck.observability.listener import listener_url

        print(f"metrics on {listener_url(*settings.metrics_addr)}", flush=True)
    pipes = pipes_to_children(settings, workers)
    metrics_addr = settings.metrics_addr if settings.metrics else None
    children = serve_worker_processes(workers, _echo_line, worker_pool, pipes, metrics_addr) if workers else None
    announce = _announce(_public_url(host, port))

    def ready(info: ReadyInfo) -> None:
        announce(info)
        if children is not None:  # after the API process migrated the database
            children.start()

    config = ApiConfig(bootstrap_admin=True, on_ready=ready, fanout_transport=pipes)
    log_config = uvicorn_log_config(settings.log_format)
    kwargs: dict[str, Any] = {} if log_config is None else {"log_config": log_config}
    log_level = "info" if args.verbose else "warning"  # uvicorn's start-up lines and access log: --verbose
    # proxy_headers=False: only FLOWDECK_TRUSTED_PROXIES decides whose X-Forwarded-For is believed (app.py).
    app = build_app(settings, config)

    def hurry() -> None:
        if app.context.running:
            app.context.services.engine.worker.hurry()

    server = DrainingServer(
        uvicorn.Config(app.asgi, host=host, port=port, log_level=log_level, proxy_headers=False, **kwargs),
        hurry,
        children,
        children_grace=settings.shutdown_grace + 10,  # their drain runs beside serve's, from the same signal
    )
    server.run()
    return 0


async def _worker(
    settings: Settings, *, supervised: bool = False, bench_nodes: bool = False, parent_pipe: int | None = None
) -> None:
    from flowdeck.engine.pipe_transport import ParentPipe
    from flowdeck.lifecycle import StopSignals
    from flowdeck.runtime import freeze_startup_heap, open_runtime
    from flowdeck.worker_processes import ParentOrders

    signals = ParentOrders() if supervised else StopSignals()
    extra = _bench_handlers() if bench_nodes else ()
    transport = ParentPipe(parent_pipe) if parent_pipe is not None else None
    # No client waits here for a run to end: only the failed runs' ends are wanted from other processes.
    async with open_runtime(
        settings, with_worker=True, migrate=False, extra_handlers=extra, transport=transport, hears_run_ends=False
    ) as runtime:
        signals.on_second.append(runtime.engine.worker.hurry)
        listener = await _worker_metrics(settings, runtime)
        freeze_startup_heap()
        print(f"worker {runtime.engine.worker.id} running (concurrency {settings.worker_concurrency})", flush=True)
        await signals.first()
        print(
            f"stopping: running nodes may finish for {settings.shutdown_grace:g} s "
            f"(a second signal{' to the parent' if supervised else ''} stops now)",
            flush=True,
        )
        if listener is not None:
            await listener.close()
    print("worker stopped; what was left running was handed back", flush=True)


async def _worker_metrics(settings: Settings, runtime: Runtime) -> MetricsListener | None:
    """``FLOWDECK_METRICS_ADDR``: the worker's metrics on a listener of their own (it serves no HTTP otherwise)."""
    if not settings.metrics or settings.metrics_addr is None:
        return None
    from flowdeck.observability.listener import open_metrics_listener
    from flowdeck.observability.metrics import Metrics, observe_engine

    metrics = Metrics()
    traffic = runtime.fanout.traffic if runtime.fanout is not None else None
    observe_engine(metrics, runtime.engine, sandbox=runtime.sandbox, fanout=traffic)
    listener = await open_metrics_listener(metrics, settings.metrics_addr)
    print(f"metrics on {listener.url}", flush=True)
    return listener


def _bench_handlers() -> tuple[NodeHandler, ...]:
    from flowdeck.bench import NoopHandler
    from flowdeck.bench_queue import BusyHandler, FlakyHandler

    return (NoopHandler(), BusyHandler(), FlakyHandler())


def cmd_worker(args: argparse.Namespace) -> int:
    from dataclasses import replace

    settings = Settings.from_env()
    # A worker serves no HTTP: a small pool of its own (docs/operations.md "How many connections")
    settings = replace(settings, db_pool_size=settings.worker_db_pool_size, db_application_name="flowdeck-worker")
    if args.lease_seconds:
        settings = replace(settings, lease_seconds=args.lease_seconds)
    asyncio.run(
        _worker(settings, supervised=args.supervised, bench_nodes=args.bench_nodes, parent_pipe=args.parent_pipe)
    )
    return 0


def cmd_migrate(_: argparse.Namespace) -> int:
    from flowdeck.storage.migrate import upgrade

    settings = Settings.from_env()
    migration = asyncio.run(upgrade(settings.database_url))
    if not migration.changed:  # a change was announced by the migration itself
        print(f"database already at the latest revision {migration.head}", file=sys.stderr)
    return 0


async def _prune(settings: Settings, dry_run: bool, fast: bool) -> list[str]:
    from flowdeck.engine.pruning import Pruner
    from flowdeck.storage.database import Database
    from flowdeck.storage.migrate import upgrade

    if settings.is_sqlite:  # as serve does: a SQLite file is migrated first
        await upgrade(settings.database_url)
    db = Database(settings.database_url, pool_size=2, sqlite_synchronous=settings.sqlite_synchronous)
    try:
        pruner = Pruner(db, settings.retention, share=1.0) if fast else Pruner(db, settings.retention)
        report = await pruner.prune(dry_run=dry_run)
    finally:
        await db.dispose()
    verb = "would delete" if dry_run else "deleted"
    lines = [f"{t.tenant}: {verb} {t.total} runs ({t.production} production, {t.test} test)" for t in report]
    total = sum(t.total for t in report)
    return [*lines, f"{verb} {total} runs in total" + (" (dry run: nothing was deleted)" if dry_run else "")]


def cmd_prune(args: argparse.Namespace) -> int:
    for line in asyncio.run(_prune(Settings.from_env(), args.dry_run, args.fast)):
        print(line)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from flowdeck.local_run import run_file

    try:
        run_input: Any = json.loads(args.input) if args.input else None
    except json.JSONDecodeError as exc:
        print(f"--input is not valid JSON: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(run_file(Settings.from_env(), Path(args.file), run_input, timeout=args.timeout))


def cmd_bench(args: argparse.Namespace) -> int:
    from flowdeck.bench import run_bench

    if args.history:  # issue 22: the run history at N runs
        from flowdeck.bench_history import run_history_bench

        return asyncio.run(run_history_bench(Settings.from_env(), args.runs, args.json))
    if args.prune:  # issue 22: the engine's throughput while the pruner deletes N runs beside it
        from flowdeck.bench_prune import run_prune_bench

        return asyncio.run(run_prune_bench(Settings.from_env(), args.prune, json_path=args.json))
    if args.http:  # issue 15: webhook round trips against a real `flowdeck serve`, nothing else
        from flowdeck.bench_http import run_http_bench
        from flowdeck.bench_scale import parse_workers

        serve_workers = parse_workers(args.workers) if args.workers is not None else ()
        return asyncio.run(
            run_http_bench(Settings.from_env(), quick=args.quick, json_path=args.json, serve_workers=serve_workers)
        )
    if args.workers is not None:
        from flowdeck.bench_scale import parse_workers

        workers = parse_workers(args.workers)
        return asyncio.run(run_bench(Settings.from_env(), quick=args.quick, json_path=args.json, workers=workers))
    return asyncio.run(run_bench(Settings.from_env(), quick=args.quick, json_path=args.json))


def _password_from_stdin() -> str | None:
    """The password piped in on stdin (first line), or ``None`` when there is none (a terminal, or empty)."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    line = sys.stdin.readline().rstrip("\r\n")
    return line or None


def cmd_users_create(args: argparse.Namespace) -> int:
    from flowdeck.accounts.commands import create_user
    from flowdeck.accounts.passwords import generate_password
    from flowdeck.accounts.store import UserExistsError

    piped = _password_from_stdin()
    password = piped or generate_password()
    try:
        user = asyncio.run(create_user(Settings.from_env(), args.email, args.tenant, password))
    except UserExistsError as exc:
        print(f"flowdeck: {exc}", file=sys.stderr)
        return 1
    print(f"created user {user.email} in tenant {user.tenant_name}", file=sys.stderr)
    if piped is None:
        print("generated password (printed alone on stdout):", file=sys.stderr)
        print(password)
    return 0


def cmd_users_set_password(args: argparse.Namespace) -> int:
    from flowdeck.accounts.commands import set_password
    from flowdeck.accounts.passwords import generate_password

    piped = _password_from_stdin()
    password = piped or generate_password()
    asyncio.run(set_password(Settings.from_env(), args.email, password))
    print(f"password of {args.email} changed", file=sys.stderr)
    if piped is None:
        print("generated password (printed alone on stdout):", file=sys.stderr)
        print(password)
    return 0


def cmd_tokens_create(args: argparse.Namespace) -> int:
    from flowdeck.accounts.commands import create_token

    token = asyncio.run(create_token(Settings.from_env(), args.email, args.name))
    print(token)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from flowdeck import codegen

    if args.openapi:
        Path(args.openapi).write_text(codegen.openapi_document(), encoding="utf-8")
        return 0
    root = Path(args.root)
    if not (root / "frontend" / "src").is_dir():
        print(f"flowdeck generate: {root.resolve()} is not the project root (no frontend/src)", file=sys.stderr)
        return 2
    if args.check:
        stale = codegen.check(root)
        for relative in stale:
            print(f"{relative} differs from the Python it is generated from: run `flowdeck generate`")
        return 1 if stale else 0
    for relative in codegen.write(root):
        print(f"wrote {relative}")
    return 0


def _add_account_commands(sub: Any) -> None:
    users = sub.add_parser("users", help="user accounts").add_subparsers(dest="users_command", required=True)
    create = users.add_parser("create", help="create a user (password from stdin, or generated and printed)")
    create.add_argument("--email", required=True)
    create.add_argument("--tenant", required=True, help="the tenant's name (created if new)")
    create.set_defaults(func=cmd_users_create)
    password = users.add_parser("set-password", help="set a user's password (from stdin, or generated and printed)")
    password.add_argument("--email", required=True)
    password.set_defaults(func=cmd_users_set_password)

    tokens = sub.add_parser("tokens", help="API tokens").add_subparsers(dest="tokens_command", required=True)
    token = tokens.add_parser("create", help="print a new API token for a user")
    token.add_argument("--email", required=True)
    token.add_argument("--name", default="cli", help="what the token is for (shown in lists)")
    token.set_defaults(func=cmd_tokens_create)


# --- flowdeck backup / flowdeck restore (issue 22; the logic is storage/backup.py) ---


def _copy_progress(what: str, copied: int, total: int) -> None:
    """A line per step of a copy on stderr (about twenty), rewritten in place on a terminal."""
    terminal = sys.stderr.isatty()
    percent = 100 * copied // total if total else 100
    end = "\n" if copied == total or not terminal else ""
    print(f"\r{what}: {copied}/{total} pages ({percent}%)", end=end, file=sys.stderr, flush=True)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_backup(args: argparse.Namespace) -> int:
    from flowdeck.storage.backup import BackupError, backup_sqlite, postgres_backup_advice, sqlite_file

    settings = Settings.from_env()
    try:
        database = sqlite_file(settings.database_url)
        if database is None:
            print(postgres_backup_advice(settings.database_url, args.path))
            return 0
        result = backup_sqlite(database, Path(args.path), force=args.force, progress=_copy_progress)
    except BackupError as exc:
        print(f"flowdeck backup: {exc}", file=sys.stderr)
        return 1
    size = result.path.stat().st_size / 1e6
    print(f"backed up {database} (revision {result.revision}) to {result.path}: {size:.1f} MB", file=sys.stderr)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from flowdeck.storage.backup import BackupError, postgres_restore_advice, restore_sqlite, sqlite_file

    settings = Settings.from_env()
    try:
        database = sqlite_file(settings.database_url)
        if database is None:
            print(postgres_restore_advice(settings.database_url, args.path))
            return 0
        migration = asyncio.run(restore_sqlite(Path(args.path), database, _copy_progress, _say))
    except BackupError as exc:
        print(f"flowdeck restore: {exc}", file=sys.stderr)
        return 1
    was = f"taken at revision {migration.before}, now at {migration.head}"
    print(f"restored {args.path} into {database} ({was}): start flowdeck serve", file=sys.stderr)
    return 0


def _add_backup_commands(sub: Any) -> None:
    backup = sub.add_parser("backup", help="a consistent copy of the SQLite database, also while it serves")
    backup.add_argument("path", help="where to write the copy (one SQLite file)")
    backup.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    backup.set_defaults(func=cmd_backup)
    restore = sub.add_parser("restore", help="replace the SQLite database with a backup (refused while it is in use)")
    restore.add_argument("path", help="a file written by `flowdeck backup`")
    restore.set_defaults(func=cmd_restore)


# --- end of flowdeck backup / restore ---


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flowdeck", description="Flowdeck workflow engine")
    parser.add_argument("-v", "--verbose", action="store_true", help="log everything (default: warnings only)")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="API, editor and an embedded worker in one process")
    serve.add_argument("--host", help="bind address (default FLOWDECK_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default FLOWDECK_PORT or 8000)")
    serve.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="engine worker processes beside the API process (default FLOWDECK_SERVE_WORKERS, else one per core "
        "beyond the first on PostgreSQL, 0 on SQLite)",
    )
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="a worker only (PostgreSQL); run any number of them")
    worker.add_argument("--lease-seconds", type=float, help="how long a claimed job stays leased without a heartbeat")
    # Set by the process that starts this one (serve --workers, bench --workers): orders come on stdin.
    worker.add_argument("--supervised", action="store_true", help=argparse.SUPPRESS)
    worker.add_argument("--bench-nodes", action="store_true", help=argparse.SUPPRESS)  # the benchmark's node types
    worker.add_argument("--parent-pipe", type=int, help=argparse.SUPPRESS)  # serve's socket (engine/pipe_transport.py)
    worker.set_defaults(func=cmd_worker)

    migrate = sub.add_parser("migrate", help="upgrade the database schema to the latest version")
    migrate.set_defaults(func=cmd_migrate)

    prune = sub.add_parser("prune", help="delete the finished runs past their tenant's retention, once, now")
    prune.add_argument("--dry-run", action="store_true", help="only count what would be deleted")
    prune.add_argument(
        "--fast", action="store_true", help="no rests between batches (a maintenance window: the engine waits)"
    )
    prune.set_defaults(func=cmd_prune)

    run = sub.add_parser("run", help="validate a workflow JSON file and run it once, showing each node live")
    run.add_argument("file", help="path to a workflow definition (SPEC §1 JSON)")
    run.add_argument("--input", help="the run input, as JSON")
    run.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the run (default 300)")
    run.set_defaults(func=cmd_run)

    bench = sub.add_parser("bench", help="the standard benchmark against the configured database")
    bench.add_argument("--quick", action="store_true", help="a small version that finishes in seconds")
    bench.add_argument("--json", help="also write the results as JSON to this path")
    bench.add_argument(
        "--workers",
        metavar="N[,N...]",
        help="PostgreSQL only: instead of the standard table, the concurrent and fan-out workloads and the drain "
        "across N `flowdeck worker` processes for each N (0: the bench process's own worker), e.g. 0,1,2,4; "
        "with --http (either database): the webhook rows for serve with each N of worker processes beside it",
    )
    bench.add_argument("--http", action="store_true", help="only the webhook round trips against `flowdeck serve`")
    bench.add_argument(
        "--history",
        action="store_true",
        help="only the run history: build --runs runs in one tenant (copies of real ones) and time its queries",
    )
    bench.add_argument("--runs", type=int, default=1_000_000, help="with --history: runs in the tenant")
    bench.add_argument(
        "--prune",
        type=int,
        metavar="N",
        help="only 100 concurrent chains of 5, alone and while the pruner deletes N copied runs beside them",
    )
    bench.set_defaults(func=cmd_bench)

    generate = sub.add_parser(
        "generate", help="write the TypeScript the editor imports from the Python (statuses, realtime)"
    )
    generate.add_argument("--root", default=".", help="the project root (default: the current directory)")
    generate.add_argument("--check", action="store_true", help="only report files that differ (exit 1 if any)")
    generate.add_argument(
        "--openapi", metavar="FILE", help="only write the OpenAPI document (/schema/openapi.json) to FILE"
    )
    generate.set_defaults(func=cmd_generate)

    _add_account_commands(sub)
    _add_backup_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _configure_logging(args.verbose, Settings.from_env().log_format)
        return int(args.func(args))
    except ValueError as exc:  # configuration errors (FLOWDECK_* values) are the user's to fix
        print(f"flowdeck: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
