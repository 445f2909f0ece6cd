"""The prompt the ``prompt`` program sends, as ``sessiond prompt`` builds it
(src/cli/commands/prompt-parts.ts): the text alone (a string prompt), or with ``--image``, ``--file``
and ``--json`` a prompt of parts (the text first, then the images, the files and the JSON data, each
in the order given). A path is read and sent as its bytes; an http(s) URL is sent as it is. Messages
are the Node CLI's."""

from __future__ import annotations

import errno
import re
from typing import Sequence
from urllib.parse import urlsplit

from .catalog import Prompt, PromptPart
from .jsontext import decode_json
from .parts import file_bytes, file_url, image_bytes, image_url, json_part, text_part

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}
FILE_TYPES = {
    **IMAGE_TYPES,
    ".pdf": "application/pdf",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".json": "application/json",
    ".html": "text/html",
    ".xml": "application/xml",
}
_URL = re.compile(r"https?://")


class UsageError(Exception):
    """A mistake in the command line (the program exits 2 with its message)."""


def prompt_from_options(text: str | None, images: Sequence[str], files: Sequence[str], jsons: Sequence[str], example: str) -> Prompt:
    """The prompt to admit: ``text`` alone as a string prompt, or with images, files or JSON data a
    list of parts, the text first. ``example`` is a command line to show when neither is given."""
    parts: list[PromptPart] = [
        *(_bytes_or_url("image", p, IMAGE_TYPES) for p in images),
        *(_bytes_or_url("file", p, FILE_TYPES) for p in files),
        *(_json_part(j) for j in jsons),
    ]
    if not parts:
        if text is None:
            raise UsageError(f"Give the prompt text, or parts with --image, --file or --json (e.g. {example}).")
        return text
    return parts if text is None else [text_part(text), *parts]


def _bytes_or_url(kind: str, path: str, types: dict[str, str]) -> PromptPart:
    flag = f"--{kind}"
    is_url = _URL.match(path) is not None
    name = path
    if is_url:
        bad_url = UsageError(f"{flag} {path}: not a valid URL; give an https URL such as https://example.com/cat.png, or a path.")
        try:
            split = urlsplit(path)
        except ValueError:
            raise bad_url from None
        if not split.netloc:
            raise bad_url
        name = split.path
    media_type = types.get(extname(name).lower())
    if is_url:
        if kind == "image":
            return image_url(path, media_type)
        if media_type is None:
            raise UsageError(f"{flag} {path}: cannot tell the file's type from its name; give a URL ending in {', '.join(types)}.")
        return file_url(path, media_type)
    if media_type is None:
        what = "an image" if kind == "image" else "a file"
        raise UsageError(f"{flag} {path}: {what} must be one of {', '.join(types)} (by its name), or an https URL.")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise UsageError(f"{flag} {path}: cannot read it ({_code(err)}).") from None
    if kind == "image":
        return image_bytes(data, media_type)
    return file_bytes(data, media_type, re.split(r"[\\/]", path)[-1])


def _json_part(arg: str) -> PromptPart:
    text: str | bytes = arg
    if arg.startswith("@"):
        try:
            with open(arg[1:], "rb") as f:
                text = f.read()
        except OSError as err:
            raise UsageError(f"--json {arg}: cannot read {arg[1:]} ({_code(err)}).") from None
    try:
        value = decode_json(text)
    except ValueError as err:
        raise UsageError(f"--json: {err}; give JSON text like '{{\"order\": 42}}' or @FILE.") from None
    return json_part(value)


def extname(path: str) -> str:
    """A path's extension as Node's ``path.extname`` gives it: from the last dot of the last segment
    (trailing slashes ignored), "" when that segment has no dot or only a leading one (".png" has
    none, "..png" is ".png")."""
    start_dot, start_part, end, pre_dot_state = -1, 0, -1, 0
    matched_slash = True
    for i in range(len(path) - 1, -1, -1):
        c = path[i]
        if c == "/":
            if not matched_slash:
                start_part = i + 1
                break
            continue
        if end == -1:
            matched_slash = False
            end = i + 1
        if c == ".":
            if start_dot == -1:
                start_dot = i
            elif pre_dot_state != 1:
                pre_dot_state = 1
        elif start_dot != -1:
            pre_dot_state = -1
    if start_dot == -1 or end == -1 or pre_dot_state == 0 or (pre_dot_state == 1 and start_dot == end - 1 and start_dot == start_part + 1):
        return ""
    return path[start_dot:end]


def _code(err: OSError) -> str:
    """A file error as Node names it (ENOENT, EACCES, EISDIR, ...), else its message."""
    return errno.errorcode.get(err.errno or 0) or err.strerror or str(err)
