"""Prints every committed event of a session as one JSON line, first what the stream holds, then
live as they commit, each once and in order, until SIGTERM or SIGINT (then exits 0).

    python -m sessiond_client.follow SESSION --nats URL [--after SEQ] [--live-only-events]

Each line is the event as sessiond's readers give it: id, type, version, sessionId, time, payload,
seq, position, committedAt. ``--live-only-events`` adds text deltas and other live-only events
(they have no seq) as they arrive.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from ._cli import add_connection_arguments, connect, fail, write_line
from .errors import SessiondError
from .events import Event
from .ids import validate_id

PROGRAM = "sessiond-follow"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sessiond_client.follow", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("session", help="the session id")
    add_connection_arguments(parser)
    parser.add_argument("--after", type=int, default=0, metavar="SEQ", help="start after this seq (default 0: the whole session)")
    parser.add_argument("--live-only-events", action="store_true", help="also print live-only events (text.delta, ...), which have no seq")
    return parser.parse_args(argv)


async def run(args: argparse.Namespace) -> int:
    try:
        validate_id(args.session, "session id")
    except SessiondError as err:
        return fail(PROGRAM, err.message, 2)
    if args.after < 0:
        return fail(PROGRAM, f"--after needs a whole number >= 0, got {args.after}", 2)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        client = await connect(args)
    except SessiondError as err:
        return fail(PROGRAM, err.message)

    def show(event: Event) -> None:
        write_line(event.json())

    try:
        if args.live_only_events:
            sub = await client.subscribe(args.session, show, args.after, catch_up=True, catch_up_on_reconnect=True)
        else:
            sub = await client.follow(args.session, show, args.after)
        await stop.wait()
        await sub.close()
    except SessiondError as err:
        return fail(PROGRAM, err.message)
    finally:
        await client.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
