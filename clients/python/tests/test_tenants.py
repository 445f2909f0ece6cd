"""Tenant mode (``Client.connect(tenant=...)``) against a real nats-server whose nats.conf holds two
tenant users as ``sessiond setup --tenant NAME`` prints them, and a real worker: each tenant admits
and reads its own sessions (status, events, replay through the events command), the other's ids
answer unknown_session, subscribe sees its own session's live events, and the whole log is refused;
a tenant reads the blobs of its own sessions only."""

from __future__ import annotations

import pytest
from conftest import connect, eventually, session_name
from test_blobs import image_blob_ref, png_bytes
from world import World

from sessiond_client import Client, CommandError, Event, PermissionDenied, SessiondError, decode_live, encode_live, image_bytes, text_part
from sessiond_client.commands import command_subject

WORLD_TENANTS = ["acme", "globex"]


async def settled(client: Client, session: str) -> None:
    async def check() -> bool:
        s = await client.status(session)
        return s.state == "settled" and s.pending_count == 0

    await eventually(check, f"session {session}'s turn to end", 20, every=0.1)


def test_tenant_subjects_and_names() -> None:
    assert command_subject("admit", "acme") == "sessiond.t.acme.cmd.admit"
    assert command_subject("admit") == "sessiond.cmd.admit"
    with pytest.raises(SessiondError) as err:
        command_subject("admit", "a.b")
    assert err.value.code == "invalid_option"


async def test_a_bad_tenant_name_is_refused_before_connecting(world: World) -> None:
    with pytest.raises(SessiondError) as err:
        await connect(world, "tenant-acme", tenant="acme.>")
    assert err.value.code == "invalid_option" and "tenant" in err.value.message


async def test_a_tenant_admits_reads_and_follows_its_own_sessions_only(world: World) -> None:
    acme = await connect(world, "tenant-acme", tenant="acme")
    globex = await connect(world, "tenant-globex", tenant="globex")
    try:
        assert acme.tenant == "acme" and acme.nc._inbox_prefix.decode() == "_INBOX_t.acme"  # type: ignore[attr-defined]
        session = session_name("ses_acme")
        live: list[Event] = []
        sub = await acme.subscribe(session, live.append)
        assert sub.subject == f"sessiond.t.acme.live.{session}.>"

        receipt = await acme.admit(session, "hello from acme", id="inp_acme_1")
        assert receipt.session_id == session
        await settled(acme, session)
        status = await acme.status(session)
        assert status.seq > 3

        events = await acme.events(session)
        assert [e.seq for e in events] == list(range(1, status.seq + 1)) and events[-1].type == "execution.settled"
        # replay of one session reads through events; as the Node client reads it from the stream
        replayed = await acme.replay(session)
        assert [e.to_dict() for e in replayed] == [e.to_dict() for e in events]
        assert [e.to_live_frame() for e in events] == [
            {k: v for k, v in e.items() if k != "committedAt"} for e in await world.events(session)
        ]
        assert [e.seq for e in await acme.replay(session, after_seq=2)] == list(range(3, status.seq + 1))
        assert (await acme.last_event(session)).seq == status.seq  # type: ignore[union-attr]
        assert await acme.replay(session_name("ses_acme_none")) == []

        # the live copy on the tenant's subject: every committed event, in order
        await eventually(lambda: [e.seq for e in live if e.seq is not None] == list(range(1, status.seq + 1)), "acme's live events")
        assert sub.stats.invalid == 0
        # decoding checks the tenant's subject as it does sessiond.live's
        last = events[-1]
        data = encode_live(last)
        assert decode_live(data, f"sessiond.t.acme.live.{session}.{last.type}", tenant="acme").seq == last.seq
        for wrong in (f"sessiond.live.{session}.{last.type}", f"sessiond.t.globex.live.{session}.{last.type}"):
            with pytest.raises(SessiondError) as bad:
                decode_live(data, wrong, tenant="acme")
            assert bad.value.code == "decode_failed"

        # another tenant's session is unknown to it, on every read and command
        for call in (lambda: globex.status(session), lambda: globex.events(session)):
            with pytest.raises(CommandError) as err:
                await call()
            assert err.value.code == "unknown_session"
        assert await globex.replay(session) == []

        # the whole log needs JetStream, which a tenant's user does not have
        with pytest.raises(PermissionDenied) as denied:
            await acme.replay()
        assert denied.value.code == "permission_denied" and "tenant acme" in denied.value.message

        # follow: what the tenant's session holds, then live
        followed: list[Event] = []
        f = await acme.follow(session, followed.append)
        await eventually(lambda: [e.seq for e in followed] == list(range(1, status.seq + 1)), "follow's catch-up through events")
        await f.close()
        await sub.close()
    finally:
        await acme.close()
        await globex.close()


async def test_a_tenant_may_not_send_as_another_tenant(world: World) -> None:
    acme = await connect(world, "tenant-acme", tenant="globex", connect_attempts=1)
    try:
        with pytest.raises(CommandError) as err:
            await acme.status(session_name("ses_x"))
        assert err.value.code == "permission_denied"
    except SessiondError as err:  # the server may refuse the inbox subscription first
        assert err.code == "permission_denied"
    finally:
        await acme.close()



async def test_a_tenant_reads_the_blobs_of_its_own_sessions_only(world: World) -> None:
    """An image admitted inline by acme (160 KiB: over 64 KiB, so ``admit`` uploads it first, acme's
    own blob) is read back by acme; globex asking through acme's session, or through its own that
    does not reference it, gets not_found."""
    acme = await connect(world, "tenant-acme", tenant="acme")
    globex = await connect(world, "tenant-globex", tenant="globex")
    try:
        image = png_bytes(160 * 1024)
        session = session_name("ses_acme_blob")
        await acme.admit(session, [text_part("look"), image_bytes(image, "image/png")])
        ref = image_blob_ref(await acme.events(session))
        assert await acme.read_blob(session, ref["sha256"]) == image

        mine = session_name("ses_globex_blob")
        await globex.admit(mine, "nothing attached")
        for s in (session, mine):
            with pytest.raises(CommandError) as err:
                await globex.read_blob(s, ref["sha256"])
            assert err.value.code == "not_found", s
    finally:
        await acme.close()
        await globex.close()
