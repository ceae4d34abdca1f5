"""Compute it first: answers are graded against the kit's calculator, and common mistakes
get their own explanation. Expected values come from labtools.model.expect / labtools.model.fairness;
the only literal numbers are the reference topology's link parameters (as
topologies/portfolio.py states them, with docs/reference.md's physics)."""

from __future__ import annotations

import math

import pytest

from labtools.errors import InputError, UnknownNodeError
from labtools.judge.exercises import (
    GRADE_COLUMNS,
    QUESTIONS,
    REL_TOL,
    check,
    grade,
    parse_question_id,
    question_text,
)
from labtools.model import expect
from labtools.model.fairness import max_min_shares, parse_flows

PAIRS = [("h1", "h4"), ("h1", "h9"), ("h7", "h9"), ("r1", "r2")]
PAIR_QUESTIONS = ["rtt_ms", "bottleneck_mbps", "tcp_goodput_ceiling_mbps", "bdp_bytes"]


@pytest.fixture(scope="module")
def topo(portfolio):
    return portfolio


def delay(topo, label):
    return topo.link(label).delay_ms


def rate(topo, label):
    return topo.link(label).bw_mbps


# --- correct answers -----------------------------------------------------------------
@pytest.mark.parametrize("src, dst", PAIRS)
@pytest.mark.parametrize("question", PAIR_QUESTIONS)
def test_correct_answers_pass(topo, question, src, dst):
    want = getattr(expect.expect_pair(topo, src, dst), question)
    fb = check(question, want, topo, src=src, dst=dst)
    assert fb.correct and fb.mistake == ""
    assert fb.expected == pytest.approx(want, rel=1e-3)
    assert fb.message.startswith("correct")


def test_tolerance_is_half_a_percent(topo):
    want = expect.rtt_ms(topo, "h1", "h9")
    assert check("rtt_ms", want * (1 + 0.8 * REL_TOL), topo, src="h1", dst="h9").correct
    assert not check("rtt_ms", want * (1 + 2 * REL_TOL), topo, src="h1", dst="h9").correct


def test_the_reference_networks_numbers(topo):
    # docs/reference.md's physics: RTT = 2 x one-way delays, the slowest link sets the rate.
    assert check("rtt_ms", 60, topo, src="h1", dst="h4").correct
    assert check("rtt_ms", 80, topo, src="h1", dst="h9").correct
    assert check("bottleneck_mbps", 20, topo, src="h7", dst="h9").correct
    assert check("tcp_goodput_ceiling_mbps", 30 * 1448 / 1514, topo, src="h1", dst="h4").correct


def test_coinciding_mistake_does_not_hide_a_correct_answer(topo):
    # h8-h9 crosses only L3: its sum, first and fastest link all equal the bottleneck.
    assert check("bottleneck_mbps", rate(topo, "L3"), topo, src="h8", dst="h9").correct


@pytest.mark.parametrize("spec", ["h1:h4,h2:h5", "h1:h4x2,h2:h5,h3:h6", "h1:h4,h8:h9",
                                  "h1:h9,h8:h9x2,h1:h4"])
def test_fair_share_correct(topo, spec):
    flows = parse_flows(spec)
    for index, share in enumerate(max_min_shares(topo, flows)):
        assert check("fair_share_mbps", share.share_mbps, topo, flows=spec, flow=index).correct
        name = f"{flows[index].src}:{flows[index].dst}"
        assert check("fair_share_mbps", share.share_mbps, topo, flows=spec, flow=name).correct


# --- RTT mistakes -------------------------------------------------------------------------
def test_rtt_one_way(topo):
    fb = check("rtt_ms", expect.rtt_ms(topo, "h1", "h4") / 2, topo, src="h1", dst="h4")
    assert not fb.correct and fb.mistake == "one_way"
    assert "one-way delay" in fb.message and "each direction" in fb.message
    assert "2 ×" in fb.message


def test_rtt_one_direction_of_one_link(topo):
    answer = expect.rtt_ms(topo, "h1", "h4") - delay(topo, "L1")
    fb = check("rtt_ms", answer, topo, src="h1", dst="h4")
    assert fb.mistake == "one_direction"
    assert "L1 in one direction only" in fb.message


def test_rtt_link_left_out(topo):
    answer = expect.rtt_ms(topo, "h1", "h4") - 2 * delay(topo, "L2")
    fb = check("rtt_ms", answer, topo, src="h1", dst="h4")
    assert fb.mistake == "left_out" and "left out L2" in fb.message


def test_rtt_ambiguous_answer_gets_both_explanations(topo):
    # 2 x L1 + L2 once == 2 x L2 alone on h1-h4 (20 + 20 = 40): both readings are offered.
    answer = 2 * delay(topo, "L1") + delay(topo, "L2")
    assert answer == pytest.approx(2 * delay(topo, "L2"))
    fb = check("rtt_ms", answer, topo, src="h1", dst="h4")
    assert "left out L1" in fb.message and "L2 in one direction only" in fb.message


def test_rtt_counted_twice_off_path_and_seconds(topo):
    rtt = expect.rtt_ms(topo, "h1", "h4")
    assert check("rtt_ms", 2 * rtt, topo, src="h1", dst="h4").mistake == "twice"
    all_links = 2 * sum(delay(topo, lb) for lb in ("L1", "L2", "L3"))
    fb = check("rtt_ms", all_links, topo, src="h1", dst="h4")
    assert fb.mistake == "off_path" and "not on the path" in fb.message
    assert check("rtt_ms", rtt / 1000, topo, src="h1", dst="h4").mistake == "seconds"


def test_rtt_unknown_mistake_gets_a_hint_naming_the_links(topo):
    fb = check("rtt_ms", expect.rtt_ms(topo, "h1", "h4") + 7, topo, src="h1", dst="h4")
    assert not fb.correct and fb.mistake == ""
    assert "L1" in fb.message and "L2" in fb.message and "L3" not in fb.message
    assert str(fb.expected) not in fb.message  # the number is not given away


# --- bottleneck and goodput mistakes --------------------------------------------------------
def test_bottleneck_sum_first_max(topo):
    total = sum(rate(topo, lb) for lb in ("L1", "L2", "L3"))
    fb = check("bottleneck_mbps", total, topo, src="h1", dst="h9")
    assert fb.mistake == "sum" and "slowest link sets the rate" in fb.message
    fb = check("bottleneck_mbps", rate(topo, "L1"), topo, src="h1", dst="h9")
    assert fb.mistake in ("first_link", "max") and "slowest link sets the rate" in fb.message
    assert "L1" in fb.message


def test_bottleneck_link_not_on_the_path(topo):
    fb = check("bottleneck_mbps", rate(topo, "L3"), topo, src="h1", dst="h4")
    assert fb.mistake == "off_path" and "L3 is not on the path h1 → h4" in fb.message


def test_bottleneck_given_as_goodput(topo):
    ceiling = expect.tcp_goodput_ceiling_mbps(rate(topo, "L2"))
    assert check("bottleneck_mbps", ceiling, topo, src="h1", dst="h4").mistake == "goodput"


def test_goodput_equal_to_link_rate(topo):
    fb = check("tcp_goodput_ceiling_mbps", rate(topo, "L2"), topo, src="h1", dst="h4")
    assert fb.mistake == "link_rate"
    assert "1448" in fb.message and "1514" in fb.message


@pytest.mark.parametrize("payload, frame, code", [
    (1460, 1514, "mss_1460"), (1448, 1500, "no_ethernet")])
def test_goodput_wrong_overhead(topo, payload, frame, code):
    answer = rate(topo, "L3") * payload / frame
    assert check("tcp_goodput_ceiling_mbps", answer, topo, src="h1", dst="h9").mistake == code


def test_goodput_of_the_wrong_link(topo):
    answer = expect.tcp_goodput_ceiling_mbps(rate(topo, "L1"))
    fb = check("tcp_goodput_ceiling_mbps", answer, topo, src="h1", dst="h9")
    assert fb.mistake in ("first_link", "max") and "slowest link" in fb.message


# --- BDP mistakes -----------------------------------------------------------------------------
def test_bdp_in_bits_and_with_one_way_delay(topo):
    bdp = expect.expect_pair(topo, "h1", "h4").bdp_bytes
    fb = check("bdp_bytes", bdp * 8, topo, src="h1", dst="h4")
    assert fb.mistake == "bits" and "bits" in fb.message
    one_way = delay(topo, "L1") + delay(topo, "L2")
    fb = check("bdp_bytes", expect.bdp_bytes(rate(topo, "L2"), one_way), topo, src="h1", dst="h4")
    assert fb.mistake == "one_way" and "round trip" in fb.message
    assert check("bdp_bytes", bdp * 4, topo, src="h1", dst="h4").mistake == "bits_one_way"
    assert check("bdp_bytes", bdp / 1000, topo, src="h1", dst="h4").mistake == "kilobytes"


def test_bdp_with_the_wrong_rate(topo):
    rtt = expect.rtt_ms(topo, "h1", "h9")
    answer = expect.bdp_bytes(rate(topo, "L1"), rtt)
    assert check("bdp_bytes", answer, topo, src="h1", dst="h9").mistake in ("first_link", "max")


# --- fair share mistakes ---------------------------------------------------------------------
def test_fair_share_ignoring_parallel_connections(topo):
    spec = "h1:h4x2,h2:h5,h3:h6"
    per_pair = rate(topo, "L2") / 3  # three pairs, counted as if each had one connection
    fb = check("fair_share_mbps", per_pair, topo, flows=spec, flow=0)
    assert fb.mistake == "per_pair"
    assert "per connection" in fb.message and "h1-h4 opens 2" in fb.message
    # the single-connection pairs get less than a third because h1-h4 has two slots
    assert check("fair_share_mbps", per_pair, topo, flows=spec, flow=1).mistake == "per_pair"


def test_fair_share_per_connection_instead_of_flow(topo):
    spec = "h1:h4x2,h2:h5,h3:h6"
    one = max_min_shares(topo, parse_flows(spec))[0].per_connection_mbps
    fb = check("fair_share_mbps", one, topo, flows=spec, flow="h1:h4")
    assert fb.mistake == "per_connection" and "2 connections" in fb.message


def test_fair_share_flows_that_do_not_share(topo):
    # h1-h4 and h8-h9 share no rate-limited link: halving L2 is wrong.
    fb = check("fair_share_mbps", rate(topo, "L2") / 2, topo, flows="h1:h4,h8:h9", flow=0)
    assert fb.mistake == "all_flows" and "same link" in fb.message


def test_fair_share_without_passing_on_leftovers(topo):
    # h1-h9 is held to L3 / 3 by h8-h9 x2; h1-h4 gets the rest of L2, not half of it.
    fb = check("fair_share_mbps", rate(topo, "L2") / 2, topo, flows="h1:h9,h8:h9x2,h1:h4", flow=2)
    assert fb.mistake == "no_leftover"


def test_fair_share_bottleneck_alone(topo):
    fb = check("fair_share_mbps", rate(topo, "L2"), topo, flows="h1:h4,h2:h5", flow=0)
    assert fb.mistake == "no_sharing"


# --- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("answer", ["60", None, True, math.nan, math.inf])
def test_answer_must_be_a_number(topo, answer):
    with pytest.raises(InputError):
        check("rtt_ms", answer, topo, src="h1", dst="h4")


def test_bad_questions(topo):
    with pytest.raises(InputError, match="unknown question"):
        check("latency", 60, topo, src="h1", dst="h4")
    with pytest.raises(InputError, match="missing dst"):
        check("rtt_ms", 60, topo, src="h1")
    with pytest.raises(InputError, match="unknown flows"):
        check("rtt_ms", 60, topo, src="h1", dst="h4", flows="h1:h4")
    with pytest.raises(UnknownNodeError):
        check("rtt_ms", 60, topo, src="h1", dst="h42")
    with pytest.raises(InputError, match="no rate-limited link"):
        check("bottleneck_mbps", 1, topo, src="h1", dst="h2")
    with pytest.raises(InputError, match="out of range"):
        check("fair_share_mbps", 1, topo, flows="h1:h4,h2:h5", flow=2)
    with pytest.raises(InputError, match="no flow"):
        check("fair_share_mbps", 1, topo, flows="h1:h4,h2:h5", flow="h3:h6")


# --- question ids and grading ------------------------------------------------------------------
def test_question_ids():
    assert parse_question_id("rtt_ms h1 h4") == ("rtt_ms", {"src": "h1", "dst": "h4"})
    assert parse_question_id("fair_share_mbps h1:h4x2,h2:h5 1") == (
        "fair_share_mbps", {"flows": "h1:h4x2,h2:h5", "flow": 1})
    assert question_text("bdp_bytes h1 h9") == "bandwidth-delay product h1 → h9 (bytes)"
    for bad in ("", "rtt_ms h1", "latency h1 h4"):
        with pytest.raises(InputError):
            parse_question_id(bad)
    assert set(QUESTIONS) == {"rtt_ms", "bottleneck_mbps", "tcp_goodput_ceiling_mbps",
                              "bdp_bytes", "max_rtt_ms", "fair_share_mbps", "udp_received_mbps",
                              "window_rate_mbps", "connection_window_bytes"}
    assert parse_question_id("window_rate_mbps h1 h9 25000") == (
        "window_rate_mbps", {"src": "h1", "dst": "h9", "window_bytes": "25000"})
    assert question_text("udp_received_mbps h1 h9 25") == (
        "UDP payload h1 → h9 receives when 25 Mbit/s are offered (Mbit/s)")


# h1 -> h4: L1 max(10, 20.29) ms + L2 max(20, 40.37) ms with their queues full, 30 ms back
# (bits for bytes gives drains below the delays here: the same as no queue at all)
L1_DRAIN, L2_DRAIN = 67 * 1514 * 8 / 40e3, 100 * 1514 * 8 / 30e3


@pytest.mark.parametrize("answer, mistake", [
    (60, "no_queue"), (60 + L1_DRAIN + L2_DRAIN, "delay_plus_queue"),
    (L1_DRAIN + L2_DRAIN, "one_way"), (2 * (L1_DRAIN + L2_DRAIN), "both_directions")])
def test_the_worst_rtt_and_its_usual_mistakes(topo, answer, mistake):
    from labtools.judge.exercises import check
    from labtools.model import expect

    want = expect.expect_pair(topo, "h1", "h4").max_rtt_ms
    assert check("max_rtt_ms", want, topo, src="h1", dst="h4").correct
    feedback = check("max_rtt_ms", answer, topo, src="h1", dst="h4")
    assert not feedback.correct and feedback.mistake == mistake
    assert f"{want:.1f}" not in feedback.message  # the explanation, never the number


def test_grade(topo):
    rtt = expect.rtt_ms(topo, "h1", "h4")
    table = grade({"rtt_ms h1 h4": rtt, "rtt_ms h1 h9": expect.rtt_ms(topo, "h1", "h9") / 2,
                   "bdp_bytes h7 h9": None, "fair_share_mbps h1:h4x2,h2:h5 h2:h5": "ten"}, topo)
    assert list(table.columns) == GRADE_COLUMNS
    assert table["correct"].tolist() == [True, False, False, False]
    assert table["mistake"].tolist() == ["", "one_way", "", ""]
    assert table.loc[2, "message"] == "no answer yet"
    assert "number" in table.loc[3, "message"]
    assert table.loc[3, "expected"] == pytest.approx(
        max_min_shares(topo, parse_flows("h1:h4x2,h2:h5"))[1].share_mbps)
    with pytest.raises(InputError):
        grade({"rtt h1 h4": 60}, topo)


# --- what arrives, what a window carries, the window of one connection --------------------------
# UDP: 1470 bytes of payload in a 1512-byte frame; h1 -> h9's bottleneck is L3, 20 Mbit/s
@pytest.mark.parametrize("offered, answer, mistake", [
    (25, 20, "no_overhead"), (25, 20 * 1448 / 1514, "tcp_overhead"), (25, 25, "all_arrives"),
    (10, 10 * 2 ** 20 / 1e6, "binary"), (100, 90 * 1470 / 1512, "sum")])
def test_what_udp_delivers_and_its_usual_mistakes(topo, offered, answer, mistake):
    ceiling = expect.udp_goodput_mbps(rate(topo, "L3"))
    want = min(offered, ceiling)
    assert check("udp_received_mbps", want, topo, src="h1", dst="h9", offered_mbps=offered).correct
    feedback = check("udp_received_mbps", answer, topo, src="h1", dst="h9", offered_mbps=offered)
    assert not feedback.correct and feedback.mistake == mistake
    assert f"{want:.2f}" not in feedback.message


@pytest.mark.parametrize("answer, mistake", [
    (25_000 * 8 / (40 / 1e3) / 1e6, "one_way"), (25_000 / 0.080 / 1e6, "bytes"),
    (25_000 * 8 / 80 / 1e6, "milliseconds")])
def test_what_a_window_carries_and_its_usual_mistakes(topo, answer, mistake):
    rtt = expect.rtt_ms(topo, "h1", "h9")
    assert rtt == 2 * (delay(topo, "L1") + delay(topo, "L2") + delay(topo, "L3")) == 80
    assert check("window_rate_mbps", 25_000 * 8 / (rtt / 1e3) / 1e6, topo, src="h1", dst="h9",
                 window_bytes="25000").correct
    feedback = check("window_rate_mbps", answer, topo, src="h1", dst="h9", window_bytes=25000)
    assert not feedback.correct and feedback.mistake == mistake
    # a window larger than the path needs carries the ceiling, no more
    ceiling = expect.tcp_goodput_ceiling_mbps(rate(topo, "L3"))
    assert check("window_rate_mbps", ceiling, topo, src="h1", dst="h9",
                 window_bytes=10_000_000).correct


def test_the_window_one_connection_needs(topo):
    spec = "h1:h4x2,h2:h5,h3:h6"  # four connections on L2 (30 Mbit/s), 60 ms
    bdp = expect.bdp_bytes(rate(topo, "L2"), expect.rtt_ms(topo, "h1", "h4"))
    for flow in ("h1:h4", "h2:h5", 2):
        assert check("connection_window_bytes", bdp / 4, topo, flows=spec, flow=flow).correct
    for answer, mistake in ((bdp, "whole_bdp"), (bdp / 2, "per_pair"), (bdp / 4 * 8, "bits"),
                            (bdp / 8, "one_way")):
        feedback = check("connection_window_bytes", answer, topo, flows=spec, flow="h1:h4")
        assert not feedback.correct and feedback.mistake == mistake, (answer, feedback)
    assert check("connection_window_bytes", bdp / 3, topo, flows=spec,
                 flow="h2:h5").mistake == "per_pair"  # three host pairs, four connections


def test_the_new_questions_refuse_what_is_not_a_number(topo):
    for kw in ({"offered_mbps": "lots"}, {"offered_mbps": "-5"}, {"offered_mbps": "nan"}):
        with pytest.raises(InputError, match="offered rate"):
            check("udp_received_mbps", 1, topo, src="h1", dst="h9", **kw)
    with pytest.raises(InputError, match="window"):
        check("window_rate_mbps", 1, topo, src="h1", dst="h9", window_bytes="0")
    with pytest.raises(InputError, match="no rate-limited link"):
        check("udp_received_mbps", 1, topo, src="h1", dst="h2", offered_mbps=5)
