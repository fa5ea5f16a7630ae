"""An invite as the stores keep it: written and read back, also as kept before box invites."""
from __future__ import annotations

import json

from service.store.matchmaking import Invite, InviteStatus, Player

ANN, BOB, CY = Player("ann", "Ann"), Player("bob", "Bob", {"level": 3}), Player("cy", "Cy")


def invite(**fields) -> Invite:
    return Invite("7KQ9M2XR", "-", ANN, "box", {"knock_limit": 10}, False, 1000.0, 2000.0, **fields)


def test_an_invite_reads_back_as_written():
    accepted = invite(status=InviteStatus.ACCEPTED, game_id="g_x", guests=(BOB, CY))
    for kept in (invite(), invite(guests=(BOB,)), accepted):
        assert Invite.parse(kept.dump()) == kept


def test_an_invite_kept_with_one_guest_field_reads_as_its_guests():
    for guest, guests in ((None, ()), ({"external_id": "bob", "name": "Bob", "metadata": {"level": 3}}, (BOB,))):
        data = json.loads(invite().dump())
        del data["guests"]
        data["guest"] = guest
        assert Invite.parse(json.dumps(data)) == invite(guests=guests)
