"""What the two programs share: the connection options and exit codes."""

from __future__ import annotations

import argparse
import os
import sys

from .client import Client

DEFAULT_NATS = "nats://127.0.0.1:4222"
DEFAULT_USER = "client"
DEFAULT_PASS = "client-dev-secret"


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nats",
        default=os.environ.get("SESSIOND_NATS_URL", DEFAULT_NATS),
        metavar="URL",
        help=f"NATS server URL, or several comma-separated (default $SESSIOND_NATS_URL or {DEFAULT_NATS})",
    )
    parser.epilog = (
        "Credentials: SESSIOND_NATS_USER and SESSIOND_NATS_PASS "
        f"(default the {DEFAULT_USER} user of the repo's nats.conf, for development servers only)."
    )


async def connect(args: argparse.Namespace) -> Client:
    user = os.environ.get("SESSIOND_NATS_USER") or DEFAULT_USER
    password = os.environ.get("SESSIOND_NATS_PASS") or (DEFAULT_PASS if user == DEFAULT_USER else None)
    return await Client.connect(args.nats, user, password)


def fail(program: str, message: str, code: int = 1) -> int:
    sys.stderr.write(f"{program}: {message}\n")
    sys.stderr.flush()
    return code


def write_line(text: str) -> None:
    sys.stdout.buffer.write(text.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()
