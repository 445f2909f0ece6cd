"""Reading a blob: chunks asked for from each offset until none follows, the whole checked against
the hash; a reply out of place, an empty chunk with more to come and bytes of another hash are refused."""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Callable

import pytest

from sessiond_client.client import read_blob_chunks
from sessiond_client.commands import MAX_BLOB_CHUNK
from sessiond_client.errors import CommandError
from sessiond_client.generated_replies import BlobChunk

BLOB = bytes((i * 31) & 255 for i in range(2 * MAX_BLOB_CHUNK + 123))
SHA = hashlib.sha256(BLOB).hexdigest()


def chunks(mutate: Callable[[int, dict[str, Any]], None] | None = None, asked: list[int] | None = None) -> Callable[[int], Any]:
    async def chunk_at(offset: int) -> BlobChunk:
        if asked is not None:
            asked.append(offset)
        end = min(offset + MAX_BLOB_CHUNK, len(BLOB))
        wire: dict[str, Any] = {
            "sha256": SHA,
            "size": len(BLOB),
            "mediaType": "image/png",
            "offset": offset,
            "data": base64.b64encode(BLOB[offset:end]).decode(),
            "more": end < len(BLOB),
        }
        if mutate:
            mutate(offset, wire)
        return BlobChunk.from_wire(wire)

    return chunk_at


async def test_a_blob_is_read_chunk_by_chunk_and_checked() -> None:
    asked: list[int] = []
    assert await read_blob_chunks(SHA, chunks(asked=asked)) == BLOB
    assert asked == [0, MAX_BLOB_CHUNK, 2 * MAX_BLOB_CHUNK]


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
