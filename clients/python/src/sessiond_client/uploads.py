"""Uploading blobs with the ``upload`` command (docs/protocol.md, "upload"): the bytes in chunks of
exactly ``MAX_BLOB_CHUNK`` under one random upload id, offsets in order, the last chunk with the
whole's size and SHA-256 (and the owner); and an admission's large inline parts uploaded first, as
the Node client's ``uploadLargeParts`` does. ``Client.upload_blob`` and ``Client.admit`` use them."""

from __future__ import annotations

import base64
import binascii
import hashlib
import inspect
from typing import Any, AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping, Protocol, Sequence

from .commands import MAX_BLOB_CHUNK, upload_request
from .errors import CommandError
from .generated_replies import UploadReply
from .parts import INLINE_PART_BYTES


class Readable(Protocol):
    """A file opened in binary mode (``open(path, "rb")``, ``io.BytesIO``), or one whose ``read`` is a coroutine."""

    def read(self, size: int = -1, /) -> Any: ...


#: What ``upload_blob`` takes: the bytes whole, a binary file, or an (async) iterable of byte chunks of any size.
UploadSource = bytes | bytearray | memoryview | Readable | AsyncIterable[bytes] | Iterable[bytes]


def _invalid(message: str) -> CommandError:
    return CommandError("upload", "invalid_option", message)


async def _pieces(source: UploadSource) -> AsyncIterator[bytes]:
    """The source's bytes in pieces of any size."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        yield bytes(source)
    elif hasattr(source, "read"):
        while True:
            piece = source.read(MAX_BLOB_CHUNK)
            if inspect.isawaitable(piece):
                piece = await piece
            if not piece:
                return
            if not isinstance(piece, (bytes, bytearray, memoryview)):
                raise _invalid(f"upload_blob reads bytes: open the file in binary mode ('rb'); its read gave {type(piece).__name__}.")
            yield bytes(piece)
    elif isinstance(source, AsyncIterable):
        async for piece in source:
            yield _checked(piece)
    elif isinstance(source, Iterable) and not isinstance(source, str):
        for piece in source:
            yield _checked(piece)
    else:
        raise _invalid(f"upload_blob takes bytes, a binary file or an iterable of byte chunks, got {type(source).__name__}.")


def _checked(piece: object) -> bytes:
    if not isinstance(piece, (bytes, bytearray, memoryview)):
        raise _invalid(f"upload_blob's chunks must be bytes, got {type(piece).__name__}.")
    return bytes(piece)


async def chunks_of(source: UploadSource) -> AsyncIterator[bytes]:
    """The source in chunks of exactly ``MAX_BLOB_CHUNK`` bytes, the last shorter (one empty chunk for no bytes)."""
    buffer = bytearray()
    sent = False
    async for piece in _pieces(source):
        buffer += piece
        while len(buffer) >= MAX_BLOB_CHUNK:
            yield bytes(buffer[:MAX_BLOB_CHUNK])
            del buffer[:MAX_BLOB_CHUNK]
            sent = True
    if buffer or not sent:
        yield bytes(buffer)


async def upload_chunks(
    source: UploadSource,
    upload_id: str,
    media_type: str,
    send: Callable[[dict[str, Any]], Awaitable[UploadReply]],
    *,
    size: int | None = None,
    owner: str | None = None,
) -> dict[str, Any]:
    """Sends the source's chunks in order from offset 0 (one read ahead, so that the last is known)
    and returns the blob's reference, ``{"sha256", "size", "mediaType"}``. ``size`` (the whole's, when
    known) goes on every chunk; the last carries the whole's size and hash, and ``owner``."""
    if not isinstance(media_type, str) or not media_type.strip():
        raise _invalid('upload_blob needs media_type, what the bytes are, e.g. "image/png".')
    if isinstance(source, (bytes, bytearray, memoryview)):
        size = len(source)
    elif size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise _invalid(f"upload_blob's size is the blob's bytes (a whole number >= 0), got {size!r}.")
    digest = hashlib.sha256()
    offset = 0
    held: bytes | None = None
    async for chunk in chunks_of(source):
        digest.update(chunk)
        if held is not None:
            await send(upload_request(upload_id, offset, held, media_type, size))
            offset += len(held)
        held = chunk
    last = held if held is not None else b""
    total = offset + len(last)
    reply = await send(upload_request(upload_id, offset, last, media_type, total, digest.hexdigest(), owner))
    if reply.blob is None:
        raise CommandError(
            "upload",
            "internal",
            f"The worker did not answer the last chunk of upload {upload_id} with a reference: do the worker and this client speak the same protocol version?",
        )
    return reply.blob


def _inline_bytes(part: object) -> int | None:
    """An image's or a file's bytes given inline (by ``data``, with a media type): how many; None for any other part."""
    if not isinstance(part, Mapping) or part.get("type") not in ("image", "file") or "url" in part or "blob" in part:
        return None
    data, media_type = part.get("data"), part.get("mediaType")
    if not isinstance(data, str) or not isinstance(media_type, str):
        return None
    return len(data) * 3 // 4 - (2 if data.endswith("==") else 1 if data.endswith("=") else 0)


async def upload_large_parts(
    prompt: str | Sequence[Mapping[str, Any]], upload: Callable[[bytes, str], Awaitable[dict[str, Any]]]
) -> str | Sequence[Mapping[str, Any]]:
    """The prompt with each inline image or file part over ``INLINE_PART_BYTES`` uploaded first and
    replaced by ``{"type", "blob": ref}`` (a file keeps its filename): a worker refuses a larger
    admission (it is one NATS message). A prompt with none that large is returned as it is."""
    if isinstance(prompt, str) or not isinstance(prompt, (list, tuple)):
        return prompt
    if not any((_inline_bytes(p) or 0) > INLINE_PART_BYTES for p in prompt):
        return prompt
    out: list[Mapping[str, Any]] = []
    for i, part in enumerate(prompt):
        if (_inline_bytes(part) or 0) <= INLINE_PART_BYTES:
            out.append(part)
            continue
        try:
            data = base64.b64decode(part["data"], validate=True)
        except (binascii.Error, ValueError):
            out.append(part)  # not base64: sent as it is, for the worker to refuse naming the part
            continue
        try:
            ref = await upload(data, part["mediaType"])
        except CommandError as err:
            raise CommandError(
                err.verb,
                err.code,
                f"Prompt part {i} ({part['mediaType']}, {len(data)} bytes) was uploaded before the admission, and refused: {err.message}",
                err.details,
            ) from err
        replaced: dict[str, Any] = {"type": part["type"], "blob": ref}
        if part["type"] == "file" and "filename" in part:
            replaced["filename"] = part["filename"]
        out.append(replaced)
    return out
