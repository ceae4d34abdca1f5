"""Max-min fair shares and Jain's index on the reference topology."""

from __future__ import annotations

import pytest

from labtools.errors import InputError, UnknownNodeError
from labtools.model.fairness import Flow, jain_index, max_min_shares, parse_flows


@pytest.mark.parametrize("spec, shares, limits", [
    ("h1:h4,h2:h5", [15, 15], ["L2", "L2"]),
    ("h1:h4,h2:h5,h3:h6", [10, 10, 10], ["L2"] * 3),
    ("h1:h4,h7:h9", [15, 15], ["L2", "L2"]),
    ("h1:h4,h8:h9", [30, 20], ["L2", "L3"]),
    ("h1:h4x2,h2:h5,h3:h6", [15, 7.5, 7.5], ["L2"] * 3),
    ("h1:h9,h8:h9", [10, 10], ["L3", "L3"]),
    ("h1:h4,h4:h1", [30, 30], ["L2", "L2"]),  # opposite directions do not compete
])
def test_portfolio_shares(portfolio, spec, shares, limits):
    result = max_min_shares(portfolio, parse_flows(spec))
    assert [s.share_mbps for s in result] == pytest.approx(shares)
    assert [s.limited_by for s in result] == limits


def test_max_min_gives_leftover_to_unconstrained_flows(portfolio):
    # h1-h9 is held to 20/3 by L3 with h8-h9 x2; h1-h4 then gets the rest of L2.
    result = max_min_shares(portfolio, parse_flows("h1:h9,h8:h9x2,h1:h4"))
    assert [s.share_mbps for s in result] == pytest.approx([20 / 3, 40 / 3, 30 - 20 / 3])


def test_parse_flows():
    assert parse_flows("h1:h4x2, h2:h5") == [Flow("h1", "h4", 2), Flow("h2", "h5", 1)]
    for bad in ("h1-h4", "h1:h4x0", "h1:", ""):
        with pytest.raises(InputError):
            parse_flows(bad)


def test_parse_flows_refuses_what_it_cannot_read_in_one_line():
    assert parse_flows("h1:h4x064") == [Flow("h1", "h4", 64)]
    # a count of 5000 digits is more than Python reads as a number (it raised ValueError)
    with pytest.raises(InputError, match=r"flow 'h1:h4x9999.*\.\.\.': parallel connections "
                                         r"must be within 1\.\.64"):
        parse_flows("h1:h4x" + "9" * 5000)
    with pytest.raises(InputError, match="h1:h4x000"):
        parse_flows("h1:h4x000")
    with pytest.raises(InputError, match="flows must be text"):
        parse_flows(None)  # type: ignore[arg-type]
    # escaped characters print up to 10 times as long: the message stays short all the same
    # (Hypothesis found this one in tests/model/test_topology_properties.py)
    with pytest.raises(InputError) as err:
        parse_flows("0000000" + "\x1f" * 10 + "\U000101fe" * 10)
    assert len(str(err.value)) < 100


def test_unknown_host_in_flows(portfolio):
    with pytest.raises(UnknownNodeError):
        max_min_shares(portfolio, parse_flows("h1:h42"))


def test_jain_index():
    assert jain_index([10, 10, 10]) == pytest.approx(1.0)
    assert jain_index([30, 0, 0]) == pytest.approx(1 / 3)
    assert jain_index([15, 7.5, 7.5]) == pytest.approx(30 ** 2 / (3 * (225 + 2 * 56.25)))
    for bad in ([], [0, 0], [-1, 2]):
        with pytest.raises(InputError):
            jain_index(bad)


def test_jain_on_rate_over_fair_share_is_one_when_each_got_its_share():
    """docs/reference.md: a flow held to 5 Mbit/s by its own link beside one whose fair
    share is 14 got exactly its share; raw rates would say 0.82, rate / share says 1.0.
    A starved connection counts: x = 1 and 0 give 0.5."""
    assert jain_index([14.0, 5.0]) == pytest.approx(0.8167, abs=1e-4)
    assert jain_index([14.0 / 14.0, 5.0 / 5.0]) == 1.0
    assert jain_index([1.0, 0.0]) == 0.5
