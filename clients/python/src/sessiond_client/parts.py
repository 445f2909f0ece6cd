"""Prompts of parts (src/events/prompt.ts): a prompt is a string, or a list of 1 to ``MAX_PROMPT_PARTS``
parts, each a dict as the wire has it::

    {"type": "text", "text": "..."}
    {"type": "image", "url": "https://..." | "data:...", "mediaType"?: "image/png"}
    {"type": "image", "data": "<base64>", "mediaType": "image/png"}
    {"type": "file", "url": "https://...", "mediaType": "application/pdf", "filename"?: "a.pdf"}
    {"type": "file", "data": "<base64>", "mediaType": "...", "filename"?: "..."}
    {"type": "image" | "file", "blob": {"sha256", "size", "mediaType"}, "filename"?: "..."}  (files only)
    {"type": "json", "value": <any JSON value>}

No other keys. ``text_part``, ``image_url``, ``image_bytes``, ``image_blob``, ``file_url``,
``file_bytes``, ``file_blob`` and ``json_part`` build them; ``prompt_text`` is a prompt's text form, as sessiond shows it.
"""

from __future__ import annotations

import base64
from typing import Any, Mapping, Sequence

from .catalog import Prompt, PromptPart
from .jsontext import stringify

#: At most this many parts in one prompt (a worker refuses more with ``invalid_option``).
MAX_PROMPT_PARTS = 64

#: An image or a file part of more bytes than this is uploaded first by ``Client.admit`` and sent as its reference.
INLINE_PART_BYTES = 64 * 1024

#: The keys of a part in the order sessiond writes them (the catalog's).
PART_KEYS = ("type", "text", "url", "data", "mediaType", "blob", "filename", "value")


def text_part(text: str) -> PromptPart:
    return {"type": "text", "text": text}


def image_url(url: str, media_type: str | None = None) -> PromptPart:
    """An image by URL (``http://``, ``https://`` or ``data:``)."""
    return {"type": "image", "url": url, **({"mediaType": media_type} if media_type is not None else {})}


def image_bytes(data: bytes, media_type: str) -> PromptPart:
    """An image by its bytes (sent as base64), of ``media_type`` (e.g. ``image/png``)."""
    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mediaType": media_type}


def file_url(url: str, media_type: str, filename: str | None = None) -> PromptPart:
    return {"type": "file", "url": url, "mediaType": media_type, **({"filename": filename} if filename is not None else {})}


def file_bytes(data: bytes, media_type: str, filename: str | None = None) -> PromptPart:
    """A file by its bytes (sent as base64)."""
    part: PromptPart = {"type": "file", "data": base64.b64encode(data).decode("ascii"), "mediaType": media_type}
    if filename is not None:
        part["filename"] = filename
    return part


def image_blob(ref: Mapping[str, Any]) -> PromptPart:
    """An image by a stored blob's reference (``upload_blob``'s: ``{"sha256", "size", "mediaType"}``)."""
    return {"type": "image", "blob": dict(ref)}


def file_blob(ref: Mapping[str, Any], filename: str | None = None) -> PromptPart:
    """A file by a stored blob's reference (``upload_blob``'s)."""
    part: PromptPart = {"type": "file", "blob": dict(ref)}
    if filename is not None:
        part["filename"] = filename
    return part


def json_part(value: Any) -> PromptPart:
    """JSON data: ``value`` is any JSON value (dicts, lists, strings, numbers, booleans, None)."""
    return {"type": "json", "value": value}


def part_bytes(part: Mapping[str, Any]) -> bytes:
    """An image's or a file's ``data``, decoded from base64."""
    return base64.b64decode(part["data"], validate=True)


def wire_prompt(prompt: str | Sequence[Mapping[str, Any]]) -> Any:
    """A prompt as a request sends it: a string as it is; each part's known keys in sessiond's order
    (then any others, for the worker to refuse), anything else as it is."""
    if isinstance(prompt, str) or not isinstance(prompt, (list, tuple)):
        return prompt
    out: list[Any] = []
    for part in prompt:
        if isinstance(part, Mapping):
            known = {k: part[k] for k in PART_KEYS if k in part}
            out.append({**known, **{k: v for k, v in part.items() if k not in known}})
        else:
            out.append(part)
    return out


def prompt_text(prompt: Prompt) -> str:
    """A prompt as text (sessiond's ``promptText``: what a runner reading text, the CLI and the
    inspector see): a string as it is; parts joined by newlines, a JSON part as its JSON text, an
    image or a file as a bracketed note (``[image https://...]``, ``[file report.pdf
    application/pdf, 1234 bytes]``, a blob part ``[image image/png, 6291456 bytes, stored as blob
    3a7bd3e2360a]``)."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(_part_text(p) for p in prompt)


def _part_text(part: Mapping[str, Any]) -> str:
    type_ = part.get("type")
    if type_ == "text":
        return str(part["text"])
    if type_ == "json":
        return stringify(part["value"])
    name = f" {part['filename']}" if type_ == "file" and part.get("filename") else ""
    blob = part.get("blob")
    if isinstance(blob, Mapping):
        return f"[{type_}{name} {blob['mediaType']}, {blob['size']} bytes, stored as blob {str(blob['sha256'])[:12]}]"
    what = ""
    if "url" in part:
        what = " data URL" if str(part["url"]).startswith("data:") else f" {part['url']}"
    media = f" {part['mediaType']}" if part.get("mediaType") else ""
    size = ""
    if "data" in part:
        data = str(part["data"])
        size = f", {len(data) * 3 // 4 - (2 if data.endswith('==') else 1 if data.endswith('=') else 0)} bytes"
    return f"[{type_}{name}{what}{media}{size}]"
