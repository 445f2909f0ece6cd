"""Fixtures: one test world per module (clients/testing/world.ts: a real nats-server and real
sessiond workers), clients per test, and waiting with deadlines."""

from __future__ import annotations

import asyncio
import inspect
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from world import REPO_ROOT, World  # noqa: E402

from sessiond_client import Client  # noqa: E402

VECTORS = REPO_ROOT / "clients" / "protocol" / "vectors"
SCHEMA = REPO_ROOT / "clients" / "protocol" / "schema"


@pytest.fixture(scope="module")
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    """The module's world: ``WORLD_WORKERS`` workers (default 1), ``WORLD_ECHO_DELAY_MS`` per echo step,
    ``WORLD_TENANTS`` tenant users in nats.conf (default none)."""
    w = World(
        workers=getattr(request.module, "WORLD_WORKERS", 1),
        echo_delay_ms=getattr(request.module, "WORLD_ECHO_DELAY_MS", None),
        tenants=getattr(request.module, "WORLD_TENANTS", None),
    )
    try:
        yield w
    finally:
        failed = request.session.testsfailed
        tail = w.log_tail(6000)
        w.stop()
        if failed:
            sys.stderr.write(f"\n--- the world's output (last part) ---\n{tail}\n")


async def connect(world: World, user: str = "client", **options: Any) -> Client:
    name, password = world.creds(user)
    return await Client.connect(world.url, name, password, **options)


@pytest.fixture
async def client(world: World) -> AsyncIterator[Client]:
    c = await connect(world)
    try:
        yield c
    finally:
        await c.close()


async def eventually(check: Callable[[], Any], what: str, timeout: float = 20.0, every: float = 0.05) -> Any:
    """Polls ``check`` (sync or async) until it returns something truthy; fails after ``timeout`` saying ``what``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        last = result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last: {last!r})")
        await asyncio.sleep(every)


def session_name(prefix: str) -> str:
    return f"{prefix}_{time.monotonic_ns() % 10**12}"
