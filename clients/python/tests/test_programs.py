"""The two programs as subprocesses against the world: ``follow`` prints exactly the events the
stream holds, seq by seq, history first and then live, while prompts arrive through the Node
client and through ``prompt``; ``prompt`` prints the echo answer and exits with clear codes."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from conftest import eventually, session_name
from world import World

from sessiond_client import Client, prompt_text

WORLD_WORKERS = 1


def env_for(world: World, user: str = "client") -> dict[str, str]:
    name, password = world.creds(user)
    return {**os.environ, "SESSIOND_NATS_USER": name, "SESSIOND_NATS_PASS": password, "PYTHONUNBUFFERED": "1"}


async def run(world: World, program: str, *args: str, user: str = "client", timeout: float = 60) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        f"sessiond_client.{program}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env_for(world, user),
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


class Follower:
    """``follow`` running in the background, its output lines read as they come."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[dict[str, Any]] = []
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, world: World, session: str, *args: str) -> "Follower":
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sessiond_client.follow",
            session,
            "--nats",
            world.url,
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env_for(world),
        )
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    async def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        self.proc.send_signal(sig)
        await asyncio.wait_for(self.reader, 20)
        assert self.proc.stderr is not None
        err = (await self.proc.stderr.read()).decode()
        code = await asyncio.wait_for(self.proc.wait(), 20)
        return code, err


async def settled_turns(client: Client, session: str, turns: int) -> None:
    async def check() -> bool:
        s = await client.status(session)
        return s.executions >= turns and s.pending_count == 0 and s.execution is not None and s.execution.outcome == "succeeded"

    await eventually(check, f"{turns} turns of {session} to end", 30, every=0.1)


def same_as_stream(lines: list[dict[str, Any]], stored: list[dict[str, Any]]) -> None:
    assert [line["seq"] for line in lines] == [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    for line, e in zip(lines, stored):
        assert {k: line[k] for k in ("id", "type", "version", "sessionId", "time", "payload", "position")} == {
            k: e[k] for k in ("id", "type", "version", "sessionId", "time", "payload", "position")
        }


def answer_words(out: str) -> str:
    return " ".join(line.removeprefix("echo: ") for line in out.splitlines())


async def test_follow_prints_the_stream_history_then_live_while_prompts_arrive(client: Client, world: World) -> None:
    session = session_name("ses_follow")
    await world.acall("admit", sessionId=session, prompt="before follow started", id="inp_f1")
    await settled_turns(client, session, 1)
    follower = await Follower.start(world, session)
    try:
        await world.acall("admit", sessionId=session, prompt="through the node client", id="inp_f2")
        await settled_turns(client, session, 2)
        code, out, err = await run(world, "prompt", session, "through the python prompt", "--nats", world.url, "--id", "inp_f3")
        assert (code, err) == (0, "")
        assert answer_words(out) == "through the python prompt"
        stored = await world.events(session)
        await eventually(lambda: len(follower.lines) >= len(stored), f"follow to print {len(stored)} events", 20)
    finally:
        code, err = await follower.stop()
    assert code == 0, err
    stored = await world.events(session)
    same_as_stream(follower.lines, stored)
    admitted = [line["payload"]["inputId"] for line in follower.lines if line["type"] == "input.admitted"]
    assert admitted == ["inp_f1", "inp_f2", "inp_f3"]
    history = [line for line in follower.lines if "committedAt" in line]
    assert history and history[0]["seq"] == 1  # read from the stream first


async def test_follow_after_a_seq_and_stopped_with_sigint(client: Client, world: World) -> None:
    session = session_name("ses_after")
    await world.acall("admit", sessionId=session, prompt="some history here", id="inp_a1")
    await settled_turns(client, session, 1)
    stored = await world.events(session)
    follower = await Follower.start(world, session, "--after", "5")
    try:
        await eventually(lambda: len(follower.lines) >= len(stored) - 5, "follow to print the history after seq 5", 20)
    finally:
        code, err = await follower.stop(signal.SIGINT)
    assert code == 0, err
    assert [line["seq"] for line in follower.lines] == [e["seq"] for e in stored[5:]]
    assert [line["id"] for line in follower.lines] == [e["id"] for e in stored[5:]]


async def test_prompt_prints_the_echo_answer_and_is_safe_to_run_again(world: World) -> None:
    session = session_name("ses_prompt")
    code, out, err = await run(world, "prompt", session, "hello from the python prompt", "--nats", world.url, "--id", "inp_p1")
    assert (code, err) == (0, "")
    assert out.splitlines() == ["echo: hello from", "echo: the", "echo: python prompt"]
    again = await run(world, "prompt", session, "hello from the python prompt", "--nats", world.url, "--id", "inp_p1")
    assert again == (0, out, "")  # the same input: its answer, read back, no second turn
    stored = await world.events(session)
    assert [e["payload"]["inputId"] for e in stored if e["type"] == "input.admitted"] == ["inp_p1"]


async def test_prompt_and_follow_fail_clearly(world: World) -> None:
    code, out, err = await run(world, "prompt", session_name("ses_no"), "hi", "--nats", world.url, user="observer")
    assert code == 3 and out == ""
    assert "permission_denied" in err and "observer" in err
    code, out, err = await run(world, "prompt", session_name("ses_no"), "hi", "--nats", world.url, "--id", "inp_p", user="client")
    assert code == 0
    code, out, err = await run(world, "prompt", "bad.session", "hi", "--nats", world.url)
    assert code == 2 and "Invalid session id" in err
    code, out, err = await run(world, "follow", "bad.session", "--nats", world.url)
    assert code == 2 and "Invalid session id" in err
    code, out, err = await run(world, "prompt", "ses_x", "hi", "--nats", "nats://127.0.0.1:1", timeout=60)
    assert code == 3 and "Cannot connect" in err


async def test_prompt_sends_parts_as_sessiond_prompt_does(client: Client, world: World, tmp_path: Path) -> None:
    """``--image``, ``--file`` and ``--json`` make a prompt of parts as ``sessiond prompt`` does
    (src/cli/commands/prompt-parts.ts): the text first, then the images, the files and the JSON data,
    each in the order given, a path as its bytes and a URL as it is; the echo worker runs its text
    form. Bad parts exit 2 and say what to fix, in the Node CLI's words, and send nothing."""
    png = tmp_path / "cat.png"
    png.write_bytes(bytes([0x89, 0x50, 0x4E, 0x47, 1, 2, 3]))
    pdf = tmp_path / "invoice.pdf"
    pdf.write_bytes(b"%PDF-1.4 invoice")
    order = tmp_path / "order.json"
    order.write_text('{"order": 42, "lines": [{"sku": "A-1"}]}')
    session = session_name("ses_parts")
    code, out, err = await run(
        world,
        "prompt",
        session,
        "what is in these?",
        *("--image", str(png), "--image", "https://example.com/dog.jpg", "--file", str(pdf)),
        *("--json", f"@{order}", "--json", "[1, 2]", "--nats", world.url, "--id", "inp_parts"),
    )
    assert (code, err) == (0, "")
    stored = await world.events(session)
    assert stored[0]["type"] == "input.admitted"
    assert stored[0]["payload"]["prompt"] == [
        {"type": "text", "text": "what is in these?"},
        {"type": "image", "data": base64.b64encode(png.read_bytes()).decode(), "mediaType": "image/png"},
        {"type": "image", "url": "https://example.com/dog.jpg", "mediaType": "image/jpeg"},
        {"type": "file", "data": base64.b64encode(b"%PDF-1.4 invoice").decode(), "mediaType": "application/pdf", "filename": "invoice.pdf"},
        {"type": "json", "value": {"order": 42, "lines": [{"sku": "A-1"}]}},
        {"type": "json", "value": [1, 2]},
    ]
    assert answer_words(out) == " ".join(prompt_text(stored[0]["payload"]["prompt"]).split())  # the echo of its text form
    assert "what is in these?" in out and "invoice.pdf" in out

    alone = session_name("ses_json_alone")
    code, _, err = await run(world, "prompt", alone, "--json", '{"a": true}', "--nats", world.url)
    assert (code, err) == (0, "")
    assert (await world.events(alone))[0]["payload"]["prompt"] == [{"type": "json", "value": {"a": True}}]

    none_json = tmp_path / "none.json"
    for args, why in (
        (["--image", str(tmp_path / "cat.bmp")], "cat.bmp: an image must be one of .png, .jpg, .jpeg, .gif, .webp (by its name), or an https URL."),
        (["--image", str(tmp_path / "missing.png")], "missing.png: cannot read it (ENOENT)."),
        (["--file", f"{tmp_path}/.png"], "a file must be one of .png"),  # no extension, as Node's extname says
        (["--json", "{nope"], "; give JSON text like '{\"order\": 42}' or @FILE."),
        (["--json", f"@{none_json}"], f"none.json: cannot read {none_json} (ENOENT)."),
        (["--file", "https://example.com/report"], "--file https://example.com/report: cannot tell the file's type from its name; give a URL ending in .png"),
    ):
        bad = session_name("ses_badpart")
        code, out, err = await run(world, "prompt", bad, "x", *args, "--nats", world.url)
        assert code == 2 and why in err, (args, err)
        assert await world.events(bad) == []
    code, _, err = await run(world, "prompt", session_name("ses_nothing"), "--nats", world.url)
    assert code == 2 and "Give the prompt text, or parts with --image, --file or --json" in err
