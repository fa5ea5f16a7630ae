"""Whatever JSON a client sends as metadata, of a match or of a seat, the service stores it and
returns it as sent, or refuses it with a problem: never a server error, on either store."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.support import PROBLEM

EXAMPLES = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
# Integers near and beyond the 64-bit bounds, which hypothesis reaches only by chance.
EDGE_INTEGERS = st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -2**63, -2**63 - 1, 10**40, -10**40])
SCALARS = (st.none() | st.booleans() | st.integers() | EDGE_INTEGERS | st.floats()
           | st.text(st.characters(codec=None), max_size=20))


def chain(depth: int) -> list:
    """Arrays nested ``depth`` deep: deeper than any random tree gets, up to past the parser's depth."""
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
) | st.integers(1, 1100).map(chain)
METADATA = st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4) | JSON_VALUES


@EXAMPLES
@given(metadata=METADATA, on_seat=st.booleans())
def test_any_json_metadata_is_stored_as_sent_or_refused_never_a_server_error(any_app, metadata, on_seat):
    client = any_app.test_client()
    players = [{"name": "Ann", "metadata": metadata}, {"name": "Bob"}] if on_seat else None
    extra = {} if on_seat else {"metadata": metadata}
    body = {"variant": "classic", "players": players or [{"name": "Ann"}, {"name": "Bob"}], **extra}
    # json.dumps writes what JSON cannot hold too (NaN, Infinity, lone surrogates, integers of any size).
    answer = client.post("/v1/games", data=json.dumps(body), content_type="application/json")
    assert answer.status_code < 500, answer.get_data(as_text=True)
    if answer.status_code == 201:
        game = answer.get_json()["game"]
        assert (game["players"][0]["metadata"] if on_seat else game["metadata"]) == metadata
    else:
        assert answer.mimetype == PROBLEM and answer.status_code in (400, 413, 422)
        assert isinstance(answer.get_json()["code"], str)
