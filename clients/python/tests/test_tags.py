"""Tags and list against real workers: three sessions admitted with a tag of this run, one of them
tagged (a value sets a key, ``None`` removes one), listed by the tag two to a page (newest first,
each once), their tags in ``status``; ``tag`` on a session with no events is ``unknown_session``,
and bad filters and tags are refused (by the client before sending, or by the worker)."""

from __future__ import annotations

import pytest
from conftest import eventually, session_name
from world import World

from sessiond_client import Client, CommandError, SessionListItem, SessionPage, SessionTaggedEvent, TagResult

WORLD_WORKERS = 1


async def pages_of(client: Client, **filters: object) -> list[SessionPage]:
    """Every page of a listing, following ``next`` (at most 4)."""
    pages = [await client.list(**filters)]  # type: ignore[arg-type]
    while pages[-1].next is not None and len(pages) < 4:
        pages.append(await client.list(**filters, after=pages[-1].next))  # type: ignore[arg-type]
    return pages


async def test_sessions_are_tagged_and_listed_by_tag_page_by_page(client: Client, world: World) -> None:
    run = session_name("py_run")  # a tag value no other run's sessions carry
    sessions: list[str] = []
    for i in range(3):
        session = session_name(f"ses_tagged{i}")
        tags = {"py-run": run, "n": str(i)}
        receipt = await client.admit(session, f"tagged {i}", wake=False, tags=tags)
        assert (receipt.created, receipt.wake, receipt.admitted_seq) == (True, False, 1)
        status = await client.status(session)
        assert status.tags == tags and [p.tags for p in status.pending] == [tags]
        sessions.append(session)

    # tag the middle one: set one, remove another; then the same again, which changes nothing
    tagged = sessions[1]
    want = {"py-run": run, "tier": "gold"}
    result = await client.tag(tagged, {"tier": "gold", "n": None})
    assert isinstance(result, TagResult)
    assert (result.session_id, result.tags, result.changed, result.seq) == (tagged, want, True, 2)
    again = await client.tag(tagged, {"tier": "gold", "n": None, "absent": None})
    assert (again.tags, again.changed, again.seq) == (want, False, None)
    status = await client.status(tagged)
    assert status.tags == want and status.seq == 2
    events = await client.replay(tagged)
    changes = [e for e in events if isinstance(e, SessionTaggedEvent)]
    assert len(changes) == 1 and changes[0].seq == 2 and changes[0].payload.tags == {"n": None, "tier": "gold"}
    assert [e.payload.tags for e in events if e.type == "input.admitted"] == [{"py-run": run, "n": "1"}]

    # list by the run's tag, two to a page: the worker's projection follows the stream, so poll
    # until it has the three sessions (and the tag change)
    async def listed_all() -> list[SessionPage] | None:
        pages = await pages_of(client, tags={"py-run": run}, limit=2)
        found = [s for p in pages for s in p.sessions]
        done = len(found) == 3 and any(s.session_id == tagged and s.tags.get("tier") == "gold" for s in found)
        return pages if done else None

    pages = await eventually(listed_all, "the three tagged sessions to be listed", 15)
    assert [len(p.sessions) for p in pages] == [2, 1] and pages[0].next is not None and pages[1].next is None
    listed: list[SessionListItem] = [s for p in pages for s in p.sessions]
    ids = [s.session_id for s in listed]
    assert sorted(ids) == sorted(sessions)  # each once
    # newest first: by creation time, then session id
    assert listed == sorted(listed, key=lambda s: (s.created_at, s.session_id), reverse=True)
    if listed[0].created_at > listed[1].created_at > listed[2].created_at:
        assert ids == sessions[::-1]
    for s in listed:
        expected_tags = want if s.session_id == tagged else {"py-run": run, "n": str(sessions.index(s.session_id))}
        assert (s.state, s.waiting, s.pending_inputs, s.seq, s.tags, s.forked_from) == (
            "idle",
            False,
            1,
            2 if s.session_id == tagged else 1,
            expected_tags,
            None,
        )
        assert 0 < s.created_at <= s.updated_at

    # more filters: two tags; a state and a waiting none of them is in; all of them
    both = await client.list(tags={"py-run": run, "tier": "gold"})
    assert [s.session_id for s in both.sessions] == [tagged] and both.next is None
    assert (await client.list(tags={"py-run": run}, state="settled")).sessions == []
    assert (await client.list(tags={"py-run": run}, waiting=True)).sessions == []
    idle = await client.list(tags={"py-run": run}, state="idle", waiting=False, updated_since=listed[-1].created_at)
    assert [s.session_id for s in idle.sessions] == ids and idle.next is None
    # by id prefix: each id as the prefix, with the run's tag (no other session of the run starts with it)
    for session in sessions:
        assert [s.session_id for s in (await client.list(tags={"py-run": run}, id_prefix=session)).sessions] == [session]


async def test_tag_of_a_session_with_no_events_is_unknown_session(client: Client) -> None:
    nobody = session_name("ses_nobody")
    with pytest.raises(CommandError) as caught:
        await client.tag(nobody, {"tier": "gold"})
    assert (caught.value.code, caught.value.verb, caught.value.details.get("sessionId")) == ("unknown_session", "tag", nobody)
    assert "nothing to tag" in caught.value.message


async def test_bad_filters_and_tags_are_refused(client: Client) -> None:
    session = session_name("ses_badtags")
    await client.admit(session, "so that it exists", wake=False)

    async def code_of(call: object) -> CommandError:
        with pytest.raises(CommandError) as caught:
            await call  # type: ignore[misc]
        assert caught.value.message
        return caught.value

    # by the worker
    err = await code_of(client.list(after="nope"))
    assert (err.code, err.verb) == ("invalid_option", "list") and "is not a cursor" in err.message
    assert (await code_of(client.tag(session, {"bad key": "v"}))).code == "invalid_option"
    assert (await code_of(client.tag(session, {"k": "v" * 257}))).code == "invalid_option"
    # a command's tag value counts UTF-16 units at the worker (an emoji is two), as the filter check does here
    assert (await client.tag(session, {"k": "😀" * 128})).changed
    over = "x" + "😀" * 128  # 257 units; the message shows 80 of them, the last half an emoji
    err = await code_of(client.admit(session_name("ses_badtag"), "p", wake=False, tags={"k": over}))
    assert err.code == "invalid_option" and "a value is a string of 1 to 256 characters" in err.message
    assert (await code_of(client.list(tags={"k": over}))).message == err.message.replace("the admission", "the filter")
    await client.tag(session, {"k": None})
    assert (await code_of(client.admit(session_name("ses_badtag"), "p", wake=False, tags={"k": ""}))).code == "invalid_option"
    # before it is sent
    for filters in ({"limit": 0}, {"limit": 1001}, {"state": "asleep"}, {"updated_since": -1}, {"tags": {"k": "a\nb"}}, {"id_prefix": "a.b"}):
        err = await code_of(client.list(**filters))  # type: ignore[arg-type]
        assert err.code == "invalid_option" and err.message.startswith("Invalid "), filters
    assert (await code_of(client.tag("ses.with.dots", {"k": "v"}))).code == "invalid_id"
    assert (await client.status(session)).tags == {}
