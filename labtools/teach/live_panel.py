"""The live demonstration's panel for a projector (ipywidgets and matplotlib).

    from labtools.lab.session import LabSession
    from labtools.teach.live_panel import LivePanel
    lab = LabSession("portfolio"); lab.start()
    LivePanel(lab)                      # pick a preset, Start, move the sliders

A presenter's layout: the plots big (the bottleneck queue's backlog in packets, the RTT of
the ping and of TCP itself, each flow's rate, each TCP flow's cwnd), with the values the
kit expects drawn dashed beside the measured ones and a mark at every knob change; the
preset's "what to look at" line in large type; the controls small, below: the preset, Start
and Stop, and one row of sliders per shaped link (rate, delay, loss, queue limit). A slider
asks the running demonstration for the change (:meth:`labtools.lab.live.LiveDemo.request`);
everything else (flows, tc, sampling, saving) is the runtime's, in :mod:`labtools.lab.live`.
On a machine that cannot sample once a second the panel says so with its numbers and
draws the samples as points, not as curves. :func:`demo_figure` draws a recorded
demonstration again from the results store (``store.live_events(demo_id=...)``).
"""

from __future__ import annotations

import html
import io
import textwrap
import threading
import traceback
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

import ipywidgets as w

from labtools.errors import LabtoolsError
from labtools.lab.live_plan import KnobChange
from labtools.lab.live_presets import PRESETS
from labtools.model.limits import MAX_QUEUE_PKTS, MIN_RATE_MBPS

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

    from labtools.lab.live import LiveDemo
    from labtools.results.live_events import LiveEvent

#: type sizes for a projector (points)
FONT_PT = 16
TITLE_PT = 20
LINE_WIDTH = 3.0
#: the figure (inches) and its resolution
FIGSIZE = (16, 9)
DPI = 72
#: slider ranges: the largest delay (ms), loss (%), queue (packets) offered, and rate as a
#: multiple of the link's own
SLIDER_MAX_DELAY_MS = 200.0
SLIDER_MAX_LOSS_PCT = 10.0
SLIDER_MAX_QUEUE_PKTS = min(2000, MAX_QUEUE_PKTS)
SLIDER_RATE_FACTOR = 2.0
ERROR_STYLE = "color:#b00020"
#: characters of a line of the figure's title (the slow machine's note) at TITLE_PT on
#: FIGSIZE: a longer note is wrapped, not cut at the figure's edges
TITLE_LINE_CHARS = 90
#: seconds the drawing thread waits for a new sample before it looks again
REDRAW_WAIT_S = 0.25


def series(events: Sequence["LiveEvent"]) -> Dict[str, Any]:
    """What the plots draw, from a demonstration's events: ``queue`` (link -> [(t, pkts)]),
    ``rtt`` (label -> [(t, ms)]: the pings' replies and each TCP flow's own RTT), ``rate``
    and ``cwnd`` (flow -> [(t, value)]; a link's sent rate as ``LINK sent``), ``expected``
    (name -> [(t, value)]: each flow's rate and RTTs as the kit expected them from each
    event on) and ``changes`` ([(t, text)])."""
    out: Dict[str, Any] = {"queue": {}, "rtt": {}, "rate": {}, "cwnd": {}, "expected": {},
                           "changes": []}

    def add(kind: str, name: str, t: float, value: Optional[float]) -> None:
        if value is not None:
            out[kind].setdefault(name, []).append((t, value))

    for e in events:
        v = e.values
        for label, exp in (v.get("expected") or {}).items():
            add("expected", f"{label} rate_mbps", e.t_s, exp.get("rate_mbps"))
            add("expected", f"{label} rtt_ms", e.t_s, exp.get("rtt_ms"))
            add("expected", f"{label} max_rtt_ms", e.t_s, exp.get("max_rtt_ms"))
        if e.kind == "change":
            out["changes"].append((e.t_s, v.get("text", "") + (" (refused)" if "refused" in v
                                                                 else "")))
        if e.kind != "sample":
            continue
        for link, q in v.get("links", {}).items():
            add("queue", link, e.t_s, q.get("backlog_pkts"))
            add("rate", f"{link} sent", e.t_s, q.get("sent_mbps"))
        for label, replies in v.get("pings", {}).items():
            for t, rtt in replies:
                add("rtt", label, t, rtt)
        for label, flow in v.get("tcp", {}).items():  # a flow ss did not show: "missing"
            add("rate", label, e.t_s, flow.get("rate_mbps"))
            add("cwnd", label, e.t_s, flow.get("cwnd"))
            add("rtt", f"{label} (TCP)", e.t_s, flow.get("rtt_ms"))
    return out


def _draw(ax: "Axes", title: str, unit: str, lines: Dict[str, List[Any]],
          expected: Dict[str, List[Any]], changes: List[Any], points: bool) -> None:
    style: Dict[str, Any] = (dict(marker="o", linestyle="none", markersize=8) if points
                             else dict(linewidth=LINE_WIDTH))
    for name, values in lines.items():
        ax.plot([t for t, _ in values], [y for _, y in values], label=name, **style)
    for name, values in expected.items():
        ax.step([t for t, _ in values], [y for _, y in values], where="post", linestyle="--",
                linewidth=LINE_WIDTH - 1, label=f"expected {name}")
    for t, text in changes:
        ax.axvline(t, color="black", linewidth=2, alpha=0.6)
        ax.annotate(text, (t, 1), xycoords=("data", "axes fraction"), fontsize=FONT_PT - 4,
                    rotation=90, va="top", ha="right")
    ax.set_title(title, fontsize=TITLE_PT)
    ax.set_ylabel(unit, fontsize=FONT_PT)
    ax.set_xlabel("s", fontsize=FONT_PT)
    ax.tick_params(labelsize=FONT_PT)
    if lines or expected:
        ax.legend(fontsize=FONT_PT - 4, loc="upper left")


def demo_figure(events: Sequence["LiveEvent"], slow_note: Optional[str] = None) -> Any:
    """A matplotlib Figure of a demonstration (live or recorded): queue, RTT, rate, cwnd;
    expected values dashed, knob changes marked. With ``slow_note`` the samples are drawn
    as points and the note is the figure's title."""
    from matplotlib.figure import Figure

    data = series(events)
    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    axes = fig.subplots(2, 2)
    exp = data["expected"]
    panels = [
        ("bottleneck queue", "packets", data["queue"], {}),
        ("RTT", "ms", data["rtt"], {k: v for k, v in exp.items() if "rtt_ms" in k}),
        ("rate", "Mbit/s", data["rate"], {k: v for k, v in exp.items() if "rate_mbps" in k}),
        ("TCP cwnd", "segments", data["cwnd"], {}),
    ]
    for ax, (title, unit, lines, expected) in zip(axes.flat, panels):
        _draw(ax, title, unit, lines, expected, data["changes"], points=slow_note is not None)
    if slow_note:
        fig.suptitle(textwrap.fill(slow_note, TITLE_LINE_CHARS), fontsize=TITLE_PT,
                     color="#b00020")
    fig.tight_layout()
    return fig


def figure_png(fig: Any) -> bytes:
    """PNG bytes of a figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


class LivePanel(w.VBox):
    """Presets, Start/Stop, sliders per shaped link, plots updated every sample.

    Args:
        lab: a running :class:`~labtools.lab.session.LabSession` on the presets' network.
        preset: the preset chosen at first (a name of
            :data:`~labtools.lab.live_presets.PRESETS`).
        make_demo: ``(lab, preset) -> LiveDemo`` (the runtime; tests give a stand-in).
    """

    def __init__(self, lab: Any, preset: str = "bufferbloat",
                 make_demo: Optional[Callable[[Any, Any], "LiveDemo"]] = None) -> None:
        self.lab = lab
        self.make_demo = make_demo or _make_demo
        self.demo: Optional["LiveDemo"] = None
        self._stop = threading.Event()
        self._worker: Optional[threading.Thread] = None
        #: set when a sample or a change came in: the drawing thread redraws once for all
        self._redraw = threading.Event()
        small = w.Layout(width="220px")
        self.preset = w.Dropdown(options=list(PRESETS), value=preset, description="preset",
                                 layout=small)
        self.start_button = w.Button(description="Start", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True)
        self.look_at = w.HTML()
        self.status = w.HTML()
        self.plot = w.Image(format="png", layout=w.Layout(width="100%"))
        self.sliders: Dict[str, Dict[str, Any]] = {}
        rows = [self._slider_row(link) for link in lab.topo.links if link.shaped
                and link.bw_mbps is not None]
        self.preset.observe(lambda _change: self._show_look_at(), names="value")
        self.start_button.on_click(lambda _b: self.start())
        self.stop_button.on_click(lambda _b: self.stop())
        self._show_look_at()
        super().__init__([self.look_at, self.plot, self.status,
                          w.HBox([self.preset, self.start_button, self.stop_button]), *rows])

    # --- controls -------------------------------------------------------------------------
    def _slider_row(self, link: Any) -> w.HBox:
        style = {"description_width": "initial"}
        knobs = {
            "bw_mbps": w.FloatSlider(value=link.bw_mbps, min=MIN_RATE_MBPS,
                                     max=link.bw_mbps * SLIDER_RATE_FACTOR, step=0.5,
                                     description=f"{link.label} Mbit/s", style=style),
            "delay_ms": w.FloatSlider(value=link.delay_ms, min=0, max=SLIDER_MAX_DELAY_MS,
                                      step=1, description="delay ms", style=style),
            "loss_pct": w.FloatSlider(value=link.loss_pct, min=0, max=SLIDER_MAX_LOSS_PCT,
                                      step=0.1, description="loss %", style=style),
            "queue_pkts": w.IntSlider(value=link.queue_pkts or 1000, min=1,
                                      max=SLIDER_MAX_QUEUE_PKTS, description="queue pkts",
                                      style=style),
        }
        for knob, slider in knobs.items():
            slider.continuous_update = False
            slider.observe(self._on_slider(link.label, knob), names="value")
        self.sliders[link.label] = knobs
        return w.HBox(list(knobs.values()))

    def _on_slider(self, link: str, knob: str) -> Callable[[Dict[str, Any]], None]:
        def changed(change: Dict[str, Any]) -> None:
            self.change(link, knob, change["new"])
        return changed

    def change(self, link: str, knob: str, value: float) -> None:
        """Ask the running demonstration to set ``knob`` of ``link`` (a slider moved);
        nothing runs while no demonstration does."""
        if self.demo is None:
            self.status.value = "start a preset first: the sliders act on a running demo"
            return
        self.demo.request(KnobChange(link, ((knob, value),)))

    def _show_look_at(self) -> None:
        chosen = PRESETS[self.preset.value]
        self.look_at.value = (f'<div style="font-size:{TITLE_PT + 6}px;line-height:1.3">'
                              f"<b>{html.escape(chosen.name)}</b>: "
                              f"{html.escape(chosen.look_at)}</div>")

    # --- running -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the chosen preset on a thread of its own (the sliders stay live)."""
        if self._worker is not None and self._worker.is_alive():
            return
        chosen = PRESETS[self.preset.value]
        self.demo = self.make_demo(self.lab, chosen)
        self._stop.clear()
        self.start_button.disabled, self.stop_button.disabled = True, False
        demo = self.demo
        self._worker = threading.Thread(target=self._run, args=(demo, chosen), daemon=True)
        self._worker.start()

    def _draw_while(self, running: threading.Event) -> None:
        """Redraw when asked, until ``running`` is cleared: drawing the figure (seconds under
        software emulation) never holds up the demonstration's sampling and changes."""
        while running.is_set():
            if self._redraw.wait(REDRAW_WAIT_S):
                self._redraw.clear()
                self.refresh()

    def _run(self, demo: "LiveDemo", chosen: Any) -> None:
        running = threading.Event()
        running.set()
        drawer = threading.Thread(target=self._draw_while, args=(running,), daemon=True)
        drawer.start()
        try:
            demo.run(chosen.duration_s, chosen.changes, on_sample=lambda _v: self._redraw.set(),
                     stop=self._stop, on_change=lambda _v: self._redraw.set())
        except LabtoolsError as err:  # one line in the panel: a thread's error is lost otherwise
            self.status.value = f'<span style="{ERROR_STYLE}">{html.escape(str(err))}</span>'
        except Exception:  # noqa: BLE001 - a bug keeps its traceback, in the panel
            self.status.value = f"<pre>{html.escape(traceback.format_exc())}</pre>"
        finally:
            running.clear()
            drawer.join()
            self.start_button.disabled, self.stop_button.disabled = False, True
            self.refresh()

    def stop(self) -> None:
        """Stop the running demonstration (its flows end; everything is saved)."""
        self._stop.set()

    def refresh(self) -> None:
        """Draw the plots again from the demonstration's events; say when the machine is
        too slow."""
        if self.demo is None:
            return
        note = self.demo.slow_note()
        self.status.value = (f'<span style="{ERROR_STYLE};font-size:{FONT_PT}px">'
                             f"{html.escape(note)}</span>" if note else "")
        self.plot.value = figure_png(demo_figure(list(self.demo.events), note))


def _make_demo(lab: Any, chosen: Any) -> "LiveDemo":
    from labtools.lab.live import LiveDemo

    return LiveDemo(lab, chosen.flows, duration_s=chosen.duration_s)
