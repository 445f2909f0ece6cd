"""The ``events`` command against a real worker: a settled turn's events read page by page, the
same as the stream holds them; ``after_seq`` and ``limit``; a history longer than one page
(``EVENTS_PAGE``) read whole across pages; ``unknown_session`` for a session with no events; bad
options refused before sending; and replies this client cannot read."""

from __future__ import annotations

import pytest
from conftest import eventually, session_name
from world import World

from sessiond_client import CommandError, EventError, EventsPage, InputAdmittedEvent, StatusReply, parse_reply
from sessiond_client.client import Client
from sessiond_client.commands import EVENTS_PAGE, command_subject, encode_request, events_request

WORLD_WORKERS = 1


async def one_page(client: Client, session: str, after_seq: int | None = None, limit: int | None = None) -> EventsPage:
    """One reply of the command, as a worker sends it."""
    msg = await client.nc.request(command_subject("events"), encode_request(events_request(session, after_seq, limit)), timeout=5)
    page: EventsPage = parse_reply("events", msg.data)
    return page


async def settled(client: Client, session: str) -> StatusReply:
    async def check() -> StatusReply | None:
        s = await client.status(session)
        return s if s.state == "settled" and s.pending_count == 0 else None

    return await eventually(check, f"session {session}'s turn to end", 20, every=0.1)


async def test_events_of_a_settled_turn_are_its_whole_history_in_order(client: Client, world: World) -> None:
    session = session_name("ses_events")
    receipt = await client.admit(session, "read me back", id="inp_ev_1")
    status = await settled(client, session)
    events = await client.events(session)
    n = status.seq
    assert n > 3 and [e.seq for e in events] == list(range(1, n + 1))
    assert all(e.session_id == session and e.committed and e.position for e in events)
    first = events[0]
    assert isinstance(first, InputAdmittedEvent) and first.payload.input_id == receipt.input_id and first.payload.prompt == "read me back"
    assert events[-1].type == "execution.settled"
    # the same events the stream holds, field for field
    stored = await client.replay(session)
    assert [e.to_dict() for e in events] == [e.to_dict() for e in stored]
    assert [type(e) for e in events] == [type(e) for e in stored]
    # and as the Node client reads them
    assert [e.to_live_frame() for e in events] == [{k: v for k, v in e.items() if k != "committedAt"} for e in await world.events(session)]

    # after_seq and limit
    assert [e.seq for e in await client.events(session, after_seq=2)] == list(range(3, n + 1))
    assert [e.seq for e in await client.events(session, after_seq=1, limit=2)] == [2, 3]
    assert [e.seq for e in await client.events(session, limit=1)] == [1]
    assert await client.events(session, after_seq=n) == []
    assert await client.events(session, after_seq=n + 100) == []
    assert [e.seq for e in await client.events(session, after_seq=n - 1, limit=EVENTS_PAGE * 3)] == [n]

    # one page as the command answers it: more says a next one follows
    page = await one_page(client, session, 0, 2)
    assert isinstance(page, EventsPage) and [e.seq for e in page.events] == [1, 2] and page.more
    page = await one_page(client, session, n - 2, 2)
    assert [e.seq for e in page.events] == [n - 1, n] and not page.more


async def test_a_history_longer_than_a_page_is_read_across_pages(client: Client) -> None:
    session = session_name("ses_events_long")
    total = EVENTS_PAGE + 20
    for i in range(total):
        await client.admit(session, f"p{i}", id=f"inp_{i}", wake=False)
    page = await one_page(client, session)
    assert len(page.events) == EVENTS_PAGE and page.more
    events = await client.events(session)
    assert [e.seq for e in events] == list(range(1, total + 1))
    assert [e.payload.input_id for e in events] == [f"inp_{i}" for i in range(total)]
    middle = await client.events(session, after_seq=EVENTS_PAGE - 5, limit=10)  # across the first page's end
    assert [e.seq for e in middle] == list(range(EVENTS_PAGE - 4, EVENTS_PAGE + 6))
    assert len(await client.events(session, limit=EVENTS_PAGE + 1)) == EVENTS_PAGE + 1
    assert [e.seq for e in await client.events(session, after_seq=10, limit=EVENTS_PAGE + 3)] == list(range(11, EVENTS_PAGE + 14))
    await client.drop(session)


async def test_events_of_an_unknown_session_is_unknown_session(client: Client) -> None:
    session = session_name("ses_nobody")
    with pytest.raises(CommandError) as caught:
        await client.events(session)
    assert caught.value.code == "unknown_session" and caught.value.verb == "events"
    assert session in caught.value.message and caught.value.details == {"sessionId": session}
    with pytest.raises(CommandError) as caught:
        await client.events(session, after_seq=5, limit=3)
    assert caught.value.code == "unknown_session"


async def test_bad_options_are_refused_before_sending(client: Client) -> None:
    for options, words in (
        ({"after_seq": -1}, "Invalid afterSeq -1: give a whole number >= 0"),
        ({"after_seq": 1.5}, "Invalid afterSeq 1.5"),
        ({"after_seq": True}, "Invalid afterSeq True"),
        ({"limit": 0}, "Invalid limit 0: give a whole number >= 1, or leave it out for every event."),
        ({"limit": "10"}, "Invalid limit '10'"),
    ):
        with pytest.raises(CommandError) as caught:
            await client.events("ses_x", **options)  # type: ignore[arg-type]
        assert caught.value.code == "invalid_option" and words in caught.value.message, (options, caught.value.message)
    with pytest.raises(CommandError) as caught:
        await client.events("not an id")
    assert caught.value.code == "invalid_id"


def test_a_reply_this_client_cannot_read_says_why() -> None:
    frame = '{"id":"evt_1","type":"session.renamed","version":1,"sessionId":"ses_x","seq":1,"time":1,"payload":{}}'
    with pytest.raises(EventError) as caught:
        parse_reply("events", '{"ok":true,"events":[' + frame + '],"more":false}')
    assert caught.value.code == "unknown_event_type" and "Event 0 of the events reply" in caught.value.message
    for body in ('{"ok":true,"events":{},"more":false}', '{"ok":true,"events":[]}', '{"ok":true,"events":[],"more":"no"}'):
        with pytest.raises(CommandError) as refused:
            parse_reply("events", body)
        assert refused.value.code == "internal" and "is something other than a sessiond worker" in refused.value.message
