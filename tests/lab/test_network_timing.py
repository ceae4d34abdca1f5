"""The real-network tests whose outcome depends on timing, run many times in one lab
(``make test-timing ROUNDS=20``): which side notices a killed server first, a hung server's
time-out, concurrent flows' start spread, a killed lab's cleanup. Each accepts every
legitimate outcome of the tools and still fails when the kit is wrong; run round after
round they show whether they ever fail at random. Not part of ``make test`` (minutes)."""

from __future__ import annotations

import os

import pytest

from tests.lab import test_network as net
from tests.lab import test_network_cleanup as cleanup

pytestmark = pytest.mark.network

ROUNDS = range(int(os.environ.get("LABTOOLS_TIMING_ROUNDS", "20")))
lab = net.lab  # the reference topology's module-scoped lab


@pytest.mark.parametrize("round_", ROUNDS)
def test_killed_server(lab, round_):
    net.test_killed_server_gives_a_clear_error_and_keeps_the_output(lab)


@pytest.mark.parametrize("round_", ROUNDS)
def test_hung_server(lab, round_):
    net.test_hung_server_times_out(lab)


@pytest.mark.parametrize("round_", ROUNDS)
def test_concurrent_flows(lab, round_):
    net.test_concurrent_flows_are_judged_and_saved_with_their_start(lab)


@pytest.mark.parametrize("round_", ROUNDS)
def test_sigkill_cleanup(tmp_path, round_):
    cleanup.test_sigkill_leaves_nothing_behind(tmp_path)
