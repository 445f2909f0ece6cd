"""The test world (clients/testing/world.ts) driven from Python: a real nats-server and real
sessiond workers, commanded over the world's stdin/stdout, one JSON line each way."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
WORLD = REPO_ROOT / "clients" / "testing" / "world.ts"


class World:
    def __init__(
        self, workers: int = 1, echo_delay_ms: int | None = None, startup_timeout: float = 90.0, tenants: list[str] | None = None
    ) -> None:
        args = ["node", "--import", "tsx", str(WORLD.relative_to(REPO_ROOT)), "--workers", str(workers)]
        if echo_delay_ms is not None:
            args += ["--echo-delay-ms", str(echo_delay_ms)]
        if tenants:  # nats.conf holds these tenants' users too (users "tenant-<name>")
            args += ["--tenants", ",".join(tenants)]
        self.stderr_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"sessiond-world-{os.getpid()}-{time.monotonic_ns()}.log"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            args,
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, "FORCE_COLOR": "0"},
        )
        self._lock = threading.Lock()
        ready = self._read_line(startup_timeout)
        if not ready.get("ready"):
            self.stop()
            raise RuntimeError(f"the test world did not start: {ready}\n{self.log_tail()}")
        self.url: str = ready["url"]
        self.users: dict[str, dict[str, str]] = ready["users"]
        self.workers: list[int | None] = list(ready["workers"])

    def _read_line(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        result: list[bytes] = []
        t = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        t.start()
        t.join(timeout)
        if not result or not result[0]:
            raise RuntimeError(f"the test world gave no answer within {timeout} s (exit code {self.proc.poll()})\n{self.log_tail()}")
        return json.loads(result[0])

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def call(self, cmd: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        with self._lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps({"cmd": cmd, **fields}) + "\n").encode())
            self.proc.stdin.flush()
            answer = self._read_line(timeout)
        if not answer.get("ok"):
            raise RuntimeError(f"world {cmd} failed: {answer.get('error')}")
        return answer

    async def acall(self, cmd: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        """``call`` off the event loop (the client goes on running while the world works)."""
        return await asyncio.to_thread(self.call, cmd, timeout, **fields)

    async def events(self, session_id: str) -> list[dict[str, Any]]:
        return (await self.acall("events", sessionId=session_id))["events"]

    async def kill_worker(self, index: int) -> None:
        await self.acall("kill_worker", index=index)
        self.workers[index] = None

    async def start_worker(self) -> int:
        answer = await self.acall("start_worker", timeout=90)
        self.workers.append(answer["pid"])
        return int(answer["index"])

    def creds(self, user: str) -> tuple[str, str]:
        u = self.users[user]
        return u["user"], u["pass"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b'{"cmd":"stop"}\n')
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()
        try:
            self.stderr_path.unlink()
        except OSError:
            pass
