"""Admits a prompt to a session, waits for the turn that runs it to end, and prints the
assistant's text (the ``text.completed`` events of that turn, one text per line).

    python -m sessiond_client.prompt SESSION ["text"] [--image PATH|URL]... [--file PATH|URL]...
        [--json DATA|@FILE]... --nats URL [--id ID] [--timeout S]

With ``--image``, ``--file`` or ``--json`` the prompt is a list of parts, as ``sessiond prompt`` makes
it: the text first (it may be left out), then the images, the files and the JSON data, each in the
order given. A path is sent as its bytes (an image .png .jpg .jpeg .gif .webp; a file one of those
or .pdf .txt .md .csv .json .html .xml, with its name), an http(s) URL as it is; ``--json`` takes
JSON text, or @FILE to read it from a file.

It subscribes to the session before admitting, follows the input to the execution that takes it
(``input.promoted``) and waits for that execution's end: ``execution.settled`` or
``execution.cancelled``; a turn handed back, recovered or resumed after a wait goes on in the
execution that runs its continuation. Exit codes: 0 the turn succeeded; 1 it failed or was cancelled; 2 a usage mistake;
3 a command failed (the message says why and what to do); 4 no end within --timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from ._cli import add_connection_arguments, connect, fail, write_line
from ._prompt_parts import UsageError, prompt_from_options
from .errors import CommandError, SessiondError
from .events import (
    Event,
    ExecutionCancelledEvent,
    ExecutionSettledEvent,
    InputAdmittedEvent,
    InputPromotedEvent,
    RecoveryCompletedEvent,
    TextCompletedEvent,
)
from .ids import new_id, validate_id

PROGRAM = "sessiond-prompt"
EXAMPLE = 'python -m sessiond_client.prompt ses_1 "what is this?" --image cat.png'


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sessiond_client.prompt", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("session", help="the session id")
    parser.add_argument("text", nargs="?", help="the prompt (with --image, --file or --json it is the first part, and may be left out)")
    parser.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="PATH|URL",
        help="add an image: a .png, .jpg, .gif or .webp file (sent as its bytes) or an https URL (repeatable)",
    )
    parser.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="PATH|URL",
        help="add a file: a .pdf, .txt, .md, .csv, .json, .html or .xml file (its bytes) or an https URL (repeatable)",
    )
    parser.add_argument(
        "--json", action="append", default=[], metavar="DATA", help="add JSON data: the JSON text, or @FILE to read it from a file (repeatable)"
    )
    add_connection_arguments(parser)
    parser.add_argument("--id", help="the input id (default a new one); admitting the same id again is a no-op")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S", help="give up after this many seconds (default 300)")
    return parser.parse_args(argv)


class Turn:
    """Follows one input through the executions that run it, to its end."""

    def __init__(self, input_id: str) -> None:
        self.inputs = {input_id}
        self.executions: set[str] = set()
        self.texts: list[str] = []
        self.outcome: str | None = None
        self.error: str | None = None
        self.ended = asyncio.Event()
        self.progress = time.monotonic()

    def see(self, event: Event) -> None:
        self.progress = time.monotonic()
        if self.ended.is_set():
            return
        if isinstance(event, InputPromotedEvent) and event.payload.input_id in self.inputs:
            self.executions.add(event.payload.execution_id)
        elif isinstance(event, InputAdmittedEvent) and event.payload.continues is not None:
            if event.payload.continues.execution_id in self.executions:
                self.inputs.add(event.payload.input_id)  # the continuation of our turn (handed back or recovered)
        elif isinstance(event, TextCompletedEvent) and event.payload.execution_id in self.executions:
            self.texts.append(event.payload.text)
        elif isinstance(event, ExecutionSettledEvent) and event.payload.execution_id in self.executions:
            # released: handed back; waiting: the turn waits for an approval, a signal or a timer and
            # resumes once they are resolved. Either way its continuation goes on.
            if event.payload.outcome not in ("released", "waiting"):
                self.outcome = event.payload.outcome
                if event.payload.error is not None:
                    self.error = f"{event.payload.error.type}: {event.payload.error.message}"
                self.ended.set()
        elif isinstance(event, ExecutionCancelledEvent) and event.payload.execution_id in self.executions:
            self.outcome = "cancelled"
            self.error = event.payload.reason
            self.ended.set()
        elif isinstance(event, RecoveryCompletedEvent) and event.payload.execution_id in self.executions:
            if event.payload.continuation_input_id is None:
                self.outcome = "failed"
                self.error = "the turn was interrupted and recovery left nothing to continue" + (
                    f" ({event.payload.error.message})" if event.payload.error else ""
                )
                self.ended.set()


async def run(args: argparse.Namespace) -> int:
    try:
        validate_id(args.session, "session id")
        if args.id is not None:
            validate_id(args.id, "input id")
        prompt = prompt_from_options(args.text, args.image, args.file, args.json, EXAMPLE)
    except SessiondError as err:
        return fail(PROGRAM, err.message, 2)
    except UsageError as err:
        return fail(PROGRAM, str(err), 2)
    try:
        client = await connect(args)
    except SessiondError as err:
        return fail(PROGRAM, err.message, 3)
    input_id = args.id or new_id("inp")
    turn = Turn(input_id)
    deadline = time.monotonic() + args.timeout
    try:
        head = await client.last_event(args.session)
        # subscribed before admitting: every event of the turn is seen (live, or read from the stream on a gap)
        sub = await client.subscribe(
            args.session,
            turn.see,
            head.seq if head and head.seq else 0,
            after_position=head.position if head and head.position else 0,
            committed_only=True,
            catch_up_on_reconnect=True,
        )
        try:
            receipt = await client.admit(args.session, prompt, id=input_id)
            if not receipt.created:
                # admitted before (an earlier run): its turn may be over already, so read the
                # session from the admission on, then live
                await sub.close()
                turn = Turn(input_id)
                sub = await client.subscribe(
                    args.session, turn.see, receipt.admitted_seq - 1, committed_only=True, catch_up=True, catch_up_on_reconnect=True
                )
            while not turn.ended.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return fail(
                        PROGRAM,
                        f"the turn of input {input_id} did not end within {args.timeout:g} s; check with status, or follow the session",
                        4,
                    )
                try:
                    await asyncio.wait_for(turn.ended.wait(), min(left, 2.0))
                except asyncio.TimeoutError:
                    if time.monotonic() - turn.progress >= 2.0:
                        sub.catch_up()  # quiet for a while: a last live event may have been lost
        finally:
            await sub.close()
    except CommandError as err:
        return fail(PROGRAM, f"{err.verb} failed ({err.code}): {err.message}", 3)
    except SessiondError as err:
        return fail(PROGRAM, f"{err.code}: {err.message}", 3)
    finally:
        await client.close()
    for text in turn.texts:
        write_line(text)
    if turn.outcome == "succeeded":
        return 0
    return fail(PROGRAM, f"the turn {turn.outcome}" + (f": {turn.error}" if turn.error else ""), 1)


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
