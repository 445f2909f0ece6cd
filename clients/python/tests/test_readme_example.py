"""The README's example (README.md, "Clients in Go and Python"; the docs test checks that its lines
are these), run against a real world."""

from __future__ import annotations

from typing import Any

from world import World


async def test_the_readme_example_admits_follows_and_replays(world: World) -> None:
    url = world.url
    seen: list[Any] = []

    def print(*args: Any) -> None:  # noqa: A001  (what the example prints, kept)
        seen.append(args)

    from sessiond_client import Client
    client = await Client.connect(url, "client", "client-dev-secret")
    sub = await client.subscribe("ses_1", lambda e: print(e.seq, e.type))
    receipt = await client.admit("ses_1", "hello")
    history = await client.replay("ses_1")
    await sub.close()
    await client.close()
    assert receipt.admitted_seq >= 1
    assert history and history[0].type == "input.admitted"
