"""Notebook widgets: UI wiring of the measurement panel, and the answer box.

The panel tests are unit tests of the UI wiring: they inject a stub runner in place of
the real measurements (the real runners are thin calls into labtools.lab.probes and
labtools.judge.verdicts, measured by the network tests). The stub's data is real captured
output (tests/fixtures/ping). The answer box calls the real labtools.judge.exercises.check.
"""

from __future__ import annotations

import base64

import matplotlib

matplotlib.use("Agg")

import threading  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402

from labtools.errors import ProbeTimeout  # noqa: E402
from labtools.judge.measurement import judge_output  # noqa: E402
from labtools.model import expect  # noqa: E402
from labtools.teach.widgets import (  # noqa: E402
    RUNNERS,
    AnswerBox,
    MeasurementPanel,
    RunSettings,
    verdicts_html,
)
from tests.conftest import FIXTURES  # noqa: E402


class FakeLab:
    """Stands in for a running lab in UI wiring tests: it only carries the topology."""

    def __init__(self, topo):
        self.topo = topo


@pytest.fixture()
def panel(portfolio):
    return MeasurementPanel(FakeLab(portfolio), portfolio)


def ping_result(topo, src, dst):
    """A judged measurement of a real ping capture, as the ping runner returns one."""
    command = "ping -c 30 -l 8 -i 0.005 -s 1400 -W 1 10.77.2.1".split()  # partial_loss.meta
    return judge_output("ping", (FIXTURES / "ping" / "partial_loss.txt").read_text(), topo, src,
                        dst, command=command)


def test_ui_wiring_offers_only_hosts_and_routers(panel, portfolio):
    assert list(panel.src.options) == portfolio.hosts + portfolio.routers
    assert set(panel.src.options).isdisjoint(portfolio.switches)
    assert panel.src.value not in panel.dst.options
    assert sorted(panel.dst.options) == sorted(set(panel.src.options) - {panel.src.value})
    assert list(panel.test.options) == list(RUNNERS) == [
        "ping", "iperf3 TCP", "iperf UDP", "simpleperf", "concurrent flows"]


def test_ui_wiring_source_change_updates_destinations(panel):
    panel.dst.value = "h4"
    panel.src.value = "r2"
    assert "r2" not in panel.dst.options and "h1" in panel.dst.options
    assert panel.dst.value == "h4"  # still valid: kept
    panel.src.value = "h4"
    assert "h4" not in panel.dst.options
    assert panel.dst.value != "h4"


def test_ui_wiring_rate_only_for_udp_and_flows_only_for_concurrent(panel):
    panel.test.value = "ping"
    assert panel.rate.disabled and panel.flows.disabled and not panel.src.disabled
    panel.test.value = "iperf UDP"
    assert not panel.rate.disabled
    assert panel.settings().rate_mbps == panel.rate.value
    panel.test.value = "concurrent flows"
    assert panel.rate.disabled and not panel.flows.disabled and panel.src.disabled
    assert panel.settings().rate_mbps is None
    assert panel.flows.value == "h1:h4,h2:h5"  # the portfolio file's first mux case


def test_ui_wiring_labtools_error_is_one_red_line(portfolio):
    def failing(lab, settings):
        raise ProbeTimeout("iperf3 on h1 did not finish within 25 s (is the server hung or gone?)")

    panel = MeasurementPanel(FakeLab(portfolio), portfolio, runners={"iperf3 TCP": failing})
    panel.run_button.click()
    assert "did not finish within 25 s" in panel.status.value
    assert "color:#b00020" in panel.status.value
    assert "Traceback" not in panel.status.value and "\n" not in panel.status.value
    assert panel.output.outputs == ()
    assert panel.progress.bar_style == "danger"
    assert not panel.run_button.disabled


def test_ui_wiring_a_bug_keeps_its_traceback(portfolio):
    def buggy(lab, settings):
        return {}["missing"]

    panel = MeasurementPanel(FakeLab(portfolio), portfolio, runners={"ping": buggy})
    panel.run_button.click()
    assert "internal error (KeyError)" in panel.status.value
    assert "Traceback" in panel.output.outputs[0]["data"]["text/plain"]


def test_ui_wiring_success_fills_the_output(portfolio):
    seen = []

    def stub(lab, settings):
        seen.append((lab, settings))
        return ping_result(lab.topo, settings.src, settings.dst)

    lab = FakeLab(portfolio)
    panel = MeasurementPanel(lambda: lab, portfolio, runners={"ping": stub})  # a factory
    panel.src.value, panel.dst.value, panel.duration.value = "h1", "h4", 2
    panel.run_button.click()
    assert seen == [(lab, RunSettings("ping", "h1", "h4", 2.0, None, "h1:h4,h2:h5"))]
    table, plot, runs = panel.output.outputs
    assert "rtt_min" in table["data"]["text/html"] and "<table>" in table["data"]["text/html"]
    assert base64.b64decode(plot["data"]["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    result = panel.last_result
    assert "<details>" in runs["data"]["text/html"]  # the command and its output, folded
    assert runs["data"]["text/plain"] == "h1$ ping -c 30 -l 8 -i 0.005 -s 1400 -W 1 10.77.2.1"
    assert result.raw.splitlines()[1] in runs["data"]["text/html"] and result.raw
    assert panel.progress.value == 100 and "done: ping h1 → h4" in panel.status.value
    assert panel.last_result is not None
    # a second run replaces the output in place
    panel.run_button.click()
    assert len(panel.output.outputs) == 3 and len(seen) == 2


def test_progress_moves_while_a_run_blocks(portfolio):
    values = []

    def slow(lab, settings):
        import time

        time.sleep(1.2)
        return ping_result(lab.topo, settings.src, settings.dst)

    panel = MeasurementPanel(FakeLab(portfolio), portfolio, runners={"ping": slow})
    panel.progress.observe(lambda change: values.append(change["new"]), names="value")
    panel.expected_seconds = lambda s: 2.0
    panel.run_button.click()
    running = [v for v in values if 0 < v < 100]
    assert len(set(running)) >= 2 and max(running) <= 95
    assert values[-1] == 100


def test_after_ctrl_c_run_stays_off_until_the_measurement_ends(portfolio):
    """Ctrl-C stops waiting, not measuring: a second run must not start on the same ports
    while the first one's worker thread still measures."""
    release = threading.Event()
    calls = []

    def blocking(lab, settings):
        calls.append(settings)
        release.wait(10)
        return ping_result(lab.topo, settings.src, settings.dst)

    panel = MeasurementPanel(FakeLab(portfolio), portfolio, runners={"ping": blocking})
    interrupt = threading.Timer(0.3, lambda: None)
    original_join = threading.Thread.join

    def join_then_interrupt(self, timeout=None):  # Ctrl-C arrives while the cell waits
        original_join(self, 0.05)
        if not interrupt.is_alive() and self.name == "labtools-panel-run":
            raise KeyboardInterrupt
        return None

    interrupt.start()
    threading.Thread.join = join_then_interrupt
    try:
        with pytest.raises(KeyboardInterrupt):
            panel.run()
    finally:
        threading.Thread.join = original_join
    assert panel.busy and panel.run_button.disabled
    panel.run()  # a second click while the first still measures: refused
    assert len(calls) == 1 and "still running" in panel.status.value
    release.set()
    for _ in range(100):
        if not panel.busy:
            break
        time.sleep(0.05)
    assert not panel.busy and not panel.run_button.disabled
    panel.run()
    assert len(calls) == 2 and panel.status.value.startswith("done")


def test_verdicts_html_escapes_and_colours(portfolio):
    table = ping_result(portfolio, "h1", "h4").verdicts_table
    table.loc[0, "reason"] = "<script>"
    text = verdicts_html(table)
    assert "&lt;script&gt;" in text and "<script>" not in text
    assert 'style="color:#' in text


# --- answer box ------------------------------------------------------------------------
def test_answer_box_right_and_wrong(portfolio):
    box = AnswerBox("rtt_ms h1 h4", portfolio)
    box.answer.value = str(expect.rtt_ms(portfolio, "h1", "h4"))
    box.check_button.click()
    assert box.feedback.correct and "✓" in box.result.value
    box.answer.value = str(expect.rtt_ms(portfolio, "h1", "h4") / 2)
    box.check_button.click()
    assert not box.feedback.correct and box.feedback.mistake == "one_way"
    assert "one-way delay" in box.result.value


def test_answer_box_refuses_text(portfolio):
    box = AnswerBox("bdp_bytes h1 h9", portfolio)
    for text in ("225,000", "60 ms", ""):
        box.answer.value = text
        box.check_button.click()
        assert box.feedback is None and "plain number" in box.result.value
    box.answer.value = "nan"
    box.check_button.click()
    assert box.feedback is None and "finite" in box.result.value


def test_answer_box_label(portfolio):
    box = AnswerBox("fair_share_mbps h1:h4x2,h2:h5,h3:h6 h1:h4", portfolio)
    label = box.children[0].children[0].value
    assert label == "fair share of flow h1:h4 in h1:h4x2,h2:h5,h3:h6 (Mbit/s)"


# --- the real runners, on a real network -------------------------------------------------
@pytest.fixture(scope="module")
def real_lab(tmp_path_factory):
    from labtools.lab.session import LabSession

    db = tmp_path_factory.mktemp("results") / "lab.sqlite"
    with LabSession("portfolio", results=db, case="test") as lab:
        yield lab


@pytest.mark.network
@pytest.mark.parametrize("test", list(RUNNERS))
def test_panel_runs_each_test_on_a_real_network(real_lab, test):
    panel = MeasurementPanel(real_lab, real_lab.topo)
    panel.src.value, panel.dst.value, panel.duration.value = "h1", "h4", 3
    panel.test.value = test
    panel.run_button.click()
    assert panel.status.value.startswith("done"), panel.status.value
    table, plot, runs = panel.output.outputs
    result = panel.last_result
    assert runs["data"]["text/html"].count("<details>") >= 1
    verdicts = result.verdicts_table
    assert len(verdicts) >= 1 and verdicts["measured"].notna().all()
    assert "<table>" in table["data"]["text/html"] and plot["data"]["image/png"]
    runs = getattr(result, "measurements", [result])
    assert all(m.run_id is not None for m in runs)
