"""Reading a blob: chunks asked for from each offset until none follows, the whole checked against
the hash; a reply out of place, an empty chunk with more to come and bytes of another hash are refused.
The helpers below serve the tests against real workers (test_parts.py, test_tenants.py: their worlds)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from pathlib import Path
from typing import Any, Callable

import pytest
from world import REPO_ROOT, World

from sessiond_client import Event, InputAdmittedEvent
from sessiond_client.client import read_blob_chunks
from sessiond_client.commands import MAX_BLOB_CHUNK
from sessiond_client.errors import CommandError
from sessiond_client.generated_replies import BlobChunk

BLOB = bytes((i * 31) & 255 for i in range(2 * MAX_BLOB_CHUNK + 123))
SHA = hashlib.sha256(BLOB).hexdigest()


def chunks(
    mutate: Callable[[int, dict[str, Any]], None] | None = None, asked: list[tuple[int, int | None]] | None = None
) -> Callable[[int, int | None], Any]:
    async def chunk_at(offset: int, seq: int | None) -> BlobChunk:
        if asked is not None:
            asked.append((offset, seq))
        end = min(offset + MAX_BLOB_CHUNK, len(BLOB))
        wire: dict[str, Any] = {
            "sha256": SHA,
            "size": len(BLOB),
            "mediaType": "image/png",
            "offset": offset,
            "data": base64.b64encode(BLOB[offset:end]).decode(),
            "more": end < len(BLOB),
            "seq": 7,
        }
        if mutate:
            mutate(offset, wire)
        return BlobChunk.from_wire(wire)

    return chunk_at


async def test_a_blob_is_read_chunk_by_chunk_and_checked() -> None:
    asked: list[tuple[int, int | None]] = []
    assert await read_blob_chunks(SHA, chunks(asked=asked)) == BLOB
    # after the first, each request names the event the first reply found the reference in
    assert asked == [(0, None), (MAX_BLOB_CHUNK, 7), (2 * MAX_BLOB_CHUNK, 7)]


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda o, w: w.update(data=base64.b64encode(b"forged").decode(), more=False), "decode_failed"),
        (lambda o, w: w.update(offset=o + 1), "internal"),
        (lambda o, w: w.update(data="", more=True), "internal"),
        (lambda o, w: w.update(data="%%%"), "internal"),
    ],
    ids=["another hash", "out of place", "empty with more", "not base64"],
)
async def test_a_wrong_reply_is_refused(mutate: Callable[[int, dict[str, Any]], None], code: str) -> None:
    with pytest.raises(CommandError) as err:
        await read_blob_chunks(SHA, chunks(mutate))
    assert err.value.code == code


PNG_SIGNATURE = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])


def png_bytes(n: int) -> bytes:
    """``n`` bytes of a PNG: its signature, then random bytes (each test's blob is new)."""
    return PNG_SIGNATURE + os.urandom(n - len(PNG_SIGNATURE))


def image_blob_ref(events: list[Event]) -> dict[str, Any]:
    """The blob reference of the first image part of the session's ``input.admitted``."""
    for e in events:
        if isinstance(e, InputAdmittedEvent) and isinstance(e.payload.prompt, list):
            for part in e.payload.prompt:
                if part["type"] == "image":
                    assert "blob" in part, f"the image part was kept inline ({len(part.get('data', ''))} base64 characters), not stored as a blob"
                    ref: dict[str, Any] = part["blob"]
                    return ref
    raise AssertionError(f"no input.admitted with an image part among {len(events)} events")


async def prompt_with_image(world: World, session: str, image: Path, timeout: float = 60.0) -> None:
    """``sessiond prompt --nats --image`` (the Node CLI, which uploads the image in chunks) as the client user."""
    user, password = world.creds("client")
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(REPO_ROOT / "bin" / "sessiond.js"),
        "prompt",
        session,
        "what is in this photo?",
        "--image",
        str(image),
        "--nats",
        world.url,
        "--nats-user",
        user,
        cwd=REPO_ROOT,
        env={**os.environ, "SESSIOND_NATS_PASS": password, "FORCE_COLOR": "0"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"sessiond prompt --nats --image did not finish within {timeout:g} s") from None
    assert proc.returncode == 0, f"sessiond prompt --nats --image exited with {proc.returncode}:\n{out.decode(errors='replace')}"
