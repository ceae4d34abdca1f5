"""The live demonstration's panel (labtools.teach.live_panel) without a network: its
widgets, that a slider asks the runtime for the change, that the plots are drawn from the
events with the changes marked, and that a slow machine is named instead of drawn as
curves. The runtime itself is a stand-in here (tested in test_live_runtime.py and, on a
real network, test_live_network.py)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from labtools.lab.live_plan import KnobChange  # noqa: E402
from labtools.lab.live_presets import PRESETS  # noqa: E402
from labtools.model.catalog import load_topology  # noqa: E402
from labtools.results.live_events import LiveEvent  # noqa: E402
from labtools.teach.live_panel import LivePanel, demo_figure, series  # noqa: E402

PNG = b"\x89PNG"


class Lab:
    def __init__(self) -> None:
        self.topo = load_topology("portfolio")


def events():
    expected = {"tcp h1>h4": {"rate_mbps": 28.7, "rtt_ms": 60.0, "max_rtt_ms": 74.5}}
    return [
        LiveEvent("d", "start", 0.0, {}),
        LiveEvent("d", "flow", 0.1, {"flow": "tcp h1>h4", "expected": expected}),
        LiveEvent("d", "sample", 1.0, {
            "links": {"L2": {"backlog_pkts": 40, "sent_mbps": 29.0}},
            "tcp": {"tcp h1>h4": {"rate_mbps": 27.5, "cwnd": 120, "rtt_ms": 70.0}},
            "pings": {"ping h1>h4": [[0.8, 71.0], [1.0, 72.5]]}, "expected": expected}),
        LiveEvent("d", "change", 1.5, {"text": "1.5s L2 delay_ms=40", "expected": expected}),
        LiveEvent("d", "sample", 2.0, {
            "links": {"L2": {"backlog_pkts": 10, "sent_mbps": None}},
            "tcp": {}, "pings": {"ping h1>h4": [[1.9, 110.0]]}, "expected": expected}),
    ]


class Demo:
    """Stands in for LiveDemo: records requests; its run draws two samples."""

    def __init__(self, note=None) -> None:
        self.asked = []
        self.events = events()
        self.note = note

    def request(self, change):
        self.asked.append(change)

    def slow_note(self):
        return self.note

    def run(self, duration_s, changes, on_sample=None, stop=None, on_change=None):
        for event in self.events:
            if event.kind == "sample":
                on_sample(event.values)


@pytest.fixture
def panel():
    return LivePanel(Lab(), make_demo=lambda lab, chosen: Demo())


def test_each_shaped_link_has_its_four_sliders_at_its_values(panel):
    topo = Lab().topo
    assert sorted(panel.sliders) == ["L1", "L2", "L3"]
    for label, knobs in panel.sliders.items():
        link = topo.link(label)
        assert knobs["bw_mbps"].value == link.bw_mbps and knobs["delay_ms"].value == link.delay_ms
        assert knobs["queue_pkts"].value == link.queue_pkts
        assert not knobs["delay_ms"].continuous_update  # one change per release, not per pixel


def test_a_slider_asks_the_running_demo_for_the_change(panel):
    panel.sliders["L2"]["delay_ms"].value = 40
    assert "start a preset first" in panel.status.value
    panel.start()
    panel._worker.join(60)
    panel.sliders["L2"]["delay_ms"].value = 45
    assert panel.demo.asked == [KnobChange("L2", (("delay_ms", 45.0),))]


def test_the_preset_says_what_to_look_at_in_large_type(panel):
    assert PRESETS["bufferbloat"].look_at[:40] in panel.look_at.value
    panel.preset.value = "udp-knee"
    assert "UDP offered" in panel.look_at.value and "font-size:26px" in panel.look_at.value


def test_a_run_draws_the_plots_and_gives_the_buttons_back(panel):
    panel.start()
    panel._worker.join(60)
    assert not panel._worker.is_alive()
    assert bytes(panel.plot.value).startswith(PNG)
    assert not panel.start_button.disabled and panel.stop_button.disabled


def test_the_series_hold_what_the_events_measured_and_expected():
    data = series(events())
    assert data["queue"]["L2"] == [(1.0, 40), (2.0, 10)]
    assert data["rtt"]["ping h1>h4"] == [(0.8, 71.0), (1.0, 72.5), (1.9, 110.0)]
    assert data["rate"]["L2 sent"] == [(1.0, 29.0)]  # no rate without a previous sample
    assert data["changes"] == [(1.5, "1.5s L2 delay_ms=40")]
    assert data["expected"]["tcp h1>h4 max_rtt_ms"][0] == (0.1, 74.5)


def test_the_figure_marks_changes_and_a_slow_machine_gets_points_and_its_numbers():
    fig = demo_figure(events())
    assert len(fig.axes) == 4
    assert all(len([ln for ln in ax.lines if ln.get_xdata()[0] == 1.5]) == 1 for ax in fig.axes)
    note = "samples every 2.8 s: this machine is too slow for a live demo"
    slow = demo_figure(events(), note)
    assert slow._suptitle.get_text() == note
    rtt = next(ax for ax in slow.axes if ax.get_title() == "RTT")
    assert rtt.lines[0].get_linestyle() == "None" and rtt.lines[0].get_marker() == "o"


def test_a_long_slow_note_is_wrapped_within_the_figure():
    """The note the panel showed in the lab VM (tests/support/walk_demo.py, software emulation)."""
    note = ("samples every 2.6 s (the last 5: 2.6, 2.9, 3.1, 2.5, 2.6 s): this machine is too "
            "slow for a live demo (it needs one every 1 s, at most 1.5 s apart)")
    fig = demo_figure(events(), note)
    title = fig._suptitle
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    assert title.get_window_extent(renderer).width <= fig.bbox.width
    assert title.get_text().split() == note.split()


def test_a_slow_machine_is_named_in_the_panel():
    slow = LivePanel(Lab(), make_demo=lambda lab, chosen: Demo("samples every 2.8 s: slow"))
    slow.start()
    slow._worker.join(60)
    assert "samples every 2.8 s" in slow.status.value


def test_drawing_never_holds_up_the_demonstration(monkeypatch):
    """In a browser in the lab VM the panel's run stalled: each sample waited for the
    figure to be drawn (seconds under emulation). Now a drawing thread redraws once for
    the samples that came in meanwhile, and the run goes on."""
    import threading
    import time

    class Fast(Demo):
        def run(self, duration_s, changes, on_sample=None, stop=None, on_change=None):
            start = time.monotonic()
            for _ in range(20):
                on_sample({})
                time.sleep(0.01)
            self.took_s = time.monotonic() - start

    demo = Fast()
    panel = LivePanel(Lab(), make_demo=lambda lab, chosen: demo)
    drawn = []
    monkeypatch.setattr(panel, "refresh", lambda: (drawn.append(1), time.sleep(0.3)))
    panel.start()
    panel._worker.join(10)
    assert not panel._worker.is_alive() and isinstance(panel._worker, threading.Thread)
    assert demo.took_s < 1.0  # 20 samples, not 20 drawings of 0.3 s
    assert 1 <= len(drawn) < 20
