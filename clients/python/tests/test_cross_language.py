"""The followers of the two clients while prompts arrive from the other languages: the Go follower
(clients/go/cmd/follow, built with go build) prints exactly the events the stream holds while the
Python prompt program and the Node client admit; the Python follower does the same while the Go
prompt program and the Node client admit."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import eventually, session_name
from test_programs import Follower, answer_words, env_for, run, settled_turns
from world import REPO_ROOT, World

from sessiond_client import Client

GO_CLIENT = REPO_ROOT / "clients" / "go"


@pytest.fixture(scope="module")
def go_programs() -> Iterator[Path]:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    assert go, "Go is needed to build the Go client's programs (https://go.dev/dl, or apt-get install golang-go)"
    out = Path(tempfile.mkdtemp(prefix="sessiond-go-programs-"))
    try:
        for program in ("follow", "prompt"):
            built = subprocess.run([go, "build", "-o", str(out / program), f"./cmd/{program}"], cwd=GO_CLIENT, capture_output=True, text=True, timeout=300)
            assert built.returncode == 0, f"go build ./cmd/{program} failed:\n{built.stderr}"
        yield out
    finally:
        shutil.rmtree(out, ignore_errors=True)


def seqs_and_ids(events: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    return [(e["seq"], e["id"], e["type"]) for e in events]


async def test_the_go_follower_prints_the_stream_while_python_and_node_admit(client: Client, world: World, go_programs: Path) -> None:
    session = session_name("ses_x_go")
    proc = await asyncio.create_subprocess_exec(
        str(go_programs / "follow"), session, "--nats", world.url, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env_for(world)
    )
    lines: list[dict[str, Any]] = []

    async def read() -> None:
        assert proc.stdout is not None
        async for line in proc.stdout:
            lines.append(json.loads(line))

    reader = asyncio.ensure_future(read())
    try:
        code, out, err = await run(world, "prompt", session, "from the python prompt", "--nats", world.url, "--id", "inp_x1")
        assert (code, err) == (0, ""), err
        assert answer_words(out) == "from the python prompt"
        await world.acall("admit", sessionId=session, prompt="from the node client", id="inp_x2")
        await settled_turns(client, session, 2)
        stored = await world.events(session)
        await eventually(lambda: len([e for e in lines if e.get("seq")]) >= len(stored), f"the Go follower to print {len(stored)} events", 20)
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(reader, 20)
        code = await asyncio.wait_for(proc.wait(), 20)
    assert proc.stderr is not None
    assert code == 0, (await proc.stderr.read()).decode()
    committed = [e for e in lines if e.get("seq")]
    assert seqs_and_ids(committed) == seqs_and_ids(await world.events(session))


async def test_the_python_follower_prints_the_stream_while_go_and_node_admit(client: Client, world: World, go_programs: Path) -> None:
    session = session_name("ses_x_py")
    follower = await Follower.start(world, session)
    try:
        prompt = await asyncio.create_subprocess_exec(
            str(go_programs / "prompt"),
            session,
            "from the go prompt",
            "--nats",
            world.url,
            "--id",
            "inp_y1",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env_for(world),
        )
        out, err = await asyncio.wait_for(prompt.communicate(), 60)
        assert prompt.returncode == 0, err.decode()
        assert answer_words(out.decode()) == "from the go prompt"
        await world.acall("admit", sessionId=session, prompt="from the node client", id="inp_y2")
        await settled_turns(client, session, 2)
        stored = await world.events(session)
        await eventually(lambda: len(follower.lines) >= len(stored), f"the Python follower to print {len(stored)} events", 20)
    finally:
        code, ferr = await follower.stop()
    assert code == 0, ferr
    assert seqs_and_ids(follower.lines) == seqs_and_ids(await world.events(session))
