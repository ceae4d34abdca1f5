"""Notebook widgets: a measurement panel and an answer box (ipywidgets).

The widgets hold no logic of their own: the panel calls a probe (:data:`RUNNERS`, one line
each), shows the judged result's verdicts, the plot that fits it
(:func:`labtools.teach.plots.plot_measurement`) and, folded, the commands that ran with
their output (:mod:`labtools.teach.tool_runs`); the answer box calls
:func:`labtools.judge.exercises.check`.

    from labtools.teach.widgets import MeasurementPanel, AnswerBox
    MeasurementPanel(lab, lab.topo)            # lab: a running LabSession
    AnswerBox("rtt_ms h1 h4", lab.topo)

A run blocks like any cell: the measurement runs in a helper thread while the panel's
handler moves the progress bar by the elapsed time against the run's expected length, and
the click returns when the measurement ends. After Ctrl-C the Run button stays disabled
until the measurement has really finished (it has a time-out), so two runs never overlap.
"""

from __future__ import annotations

import base64
import html
import io
import threading
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Union

import ipywidgets as w

from labtools.errors import InputError, LabtoolsError
from labtools.judge.policy import MIN_RTT_PING_INTERVAL_S
from labtools.model.topology import SWITCH, Topology

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes

    from labtools.judge.measurement import Measurement
    from labtools.judge.shares import FlowsMeasurement
    from labtools.lab.session import LabSession

    Judged = Union[Measurement, FlowsMeasurement]

STARTUP_S = 2.0  #: a run's overhead beyond its duration (servers, parsing), for the progress bar
ERROR_STYLE = "color:#b00020"
VERDICT_STYLE = {"ok": "color:#1a7f37", "suspicious": "color:#b35900", "invalid": "color:#b00020",
                 "inconclusive": "color:#57606a"}


@dataclass(frozen=True)
class RunSettings:
    """What the panel asks a runner to do (durations in s, rates in Mbit/s)."""

    test: str
    src: str
    dst: str
    duration_s: float
    rate_mbps: Optional[float] = None
    flows: str = ""  #: a flow spec (``h1:h4x2,h2:h5``) for concurrent flows


# --- the runners: one probe call each -------------------------------------------------------
def run_ping(lab: "LabSession", s: RunSettings) -> "Judged":
    """ping ``src`` -> ``dst`` for about ``duration_s``, one echo per 50 ms."""
    from labtools.lab import probes

    count = max(3, round(s.duration_s / MIN_RTT_PING_INTERVAL_S))
    return probes.one_run(
        probes.ping(lab, s.src, s.dst, count=count, interval_s=MIN_RTT_PING_INTERVAL_S))


def run_iperf3(lab: "LabSession", s: RunSettings) -> "Judged":
    """iperf3 TCP ``src`` -> ``dst``, 1 s intervals, the warm-up left out."""
    from labtools.lab import probes

    return probes.one_run(probes.iperf3(lab, s.src, s.dst, duration_s=s.duration_s))


def run_udp(lab: "LabSession", s: RunSettings) -> "Judged":
    """iperf 2 UDP at ``rate_mbps`` from ``src`` to ``dst``."""
    from labtools.lab import probes

    if not s.rate_mbps or s.rate_mbps <= 0:
        raise InputError("give the UDP rate to offer (Mbit/s > 0)")
    return probes.one_run(
        probes.iperf_udp(lab, s.src, s.dst, s.rate_mbps, duration_s=s.duration_s, interval_s=1))


def run_simpleperf(lab: "LabSession", s: RunSettings) -> "Judged":
    """The kit's simpleperf ``src`` -> ``dst`` with 1 s intervals."""
    from labtools.lab import probes

    return probes.one_run(probes.simpleperf(lab, s.src, s.dst, duration_s=s.duration_s))


def run_flows(lab: "LabSession", s: RunSettings) -> "Judged":
    """Concurrent iperf3 flows (``flows``), measured shares against max-min fair shares."""
    from labtools.lab import probes
    from labtools.model.fairness import parse_flows

    return probes.one_run(
        probes.concurrent_iperf3(lab, parse_flows(s.flows, lab.topo), duration_s=s.duration_s))


#: test name (as the dropdown shows it) -> runner(lab, RunSettings) -> judged result
RUNNERS: Dict[str, Callable[["LabSession", RunSettings], "Judged"]] = {
    "ping": run_ping,
    "iperf3 TCP": run_iperf3,
    "iperf UDP": run_udp,
    "simpleperf": run_simpleperf,
    "concurrent flows": run_flows,
}
UDP_TESTS = ("iperf UDP",)
FLOW_TESTS = ("concurrent flows",)


# --- rendering -------------------------------------------------------------------------------
def verdicts_html(table: "pd.DataFrame") -> str:
    """The verdict table as HTML, each verdict in its colour (values escaped)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
    body = []
    for record in table.to_dict(orient="records"):
        cells = []
        for column, value in record.items():
            text = "" if value is None or value != value else (
                f"{value:.4g}" if isinstance(value, float) else str(value))
            style = VERDICT_STYLE.get(str(value), "") if column == "verdict" else ""
            cells.append(f'<td style="{style};text-align:left">{html.escape(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def figure_png(draw: Callable[["Axes"], "Axes"]) -> bytes:
    """PNG bytes of a plot drawn on a new figure (no pyplot state, safe in any thread)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5))
    draw(fig.subplots())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return buf.getvalue()


def _display(data: Dict[str, str]) -> Dict[str, Any]:
    return {"output_type": "display_data", "data": data, "metadata": {}}


# --- the panel ---------------------------------------------------------------------------------
class MeasurementPanel(w.VBox):
    """Pick a test, a source and a destination, run it on the lab, see expected vs measured.

    Args:
        lab_or_factory: a running :class:`~labtools.lab.session.LabSession`, or a callable that
            returns one (called at the first run).
        topo: the lab's topology (offers its hosts and routers; switches are left out).
        runners: test name -> runner; :data:`RUNNERS` unless given.
        flows: the default flow spec for concurrent flows (``h1:h4,h2:h5``).
    """

    def __init__(self, lab_or_factory: Any, topo: Topology,
                 runners: Optional[Mapping[str, Callable[[Any, RunSettings], Any]]] = None,
                 flows: Optional[str] = None) -> None:
        self._lab_source = lab_or_factory
        self._lab: Any = None if callable(lab_or_factory) else lab_or_factory
        self.topo = topo
        self.runners = dict(RUNNERS if runners is None else runners)
        self.nodes = [n.name for n in topo.nodes if n.kind != SWITCH]
        self.last_result: Any = None
        self._worker: Optional[threading.Thread] = None
        layout = w.Layout(width="260px")
        self.test = w.Dropdown(options=list(self.runners), description="test", layout=layout)
        self.src = w.Dropdown(options=self.nodes, description="source", layout=layout)
        self.dst = w.Dropdown(options=self._destinations(self.nodes[0]),
                              description="destination", layout=layout)
        self.duration = w.BoundedFloatText(value=5, min=1, max=120, step=1,
                                           description="duration (s)", layout=layout)
        self.rate = w.BoundedFloatText(value=10, min=0.1, max=10000, step=1,
                                       description="rate (Mbit/s)", layout=layout)
        self.flows = w.Text(value=flows or self._default_flows(), description="flows",
                            placeholder="h1:h4x2,h2:h5", layout=w.Layout(width="400px"))
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.progress = w.IntProgress(value=0, min=0, max=100, description="")
        self.status = w.HTML(value="")
        self.output = w.Output()
        self.src.observe(self._on_src, names="value")
        self.test.observe(self._on_test, names="value")
        self.run_button.on_click(lambda _button: self.run())
        self._on_test()
        super().__init__([
            w.HBox([self.test, self.src, self.dst]),
            w.HBox([self.duration, self.rate, self.flows]),
            w.HBox([self.run_button, self.progress, self.status]),
            self.output,
        ])

    # --- choices ---------------------------------------------------------------------------
    def _destinations(self, src: str) -> List[str]:
        return [n for n in self.nodes if n != src]

    def _default_flows(self) -> str:
        """The first flow set the topology file declares (``CASES["mux"]``), else the first
        and last host."""
        from labtools.model.catalog import load_cases

        try:
            sets = load_cases(self.topo.name).get("mux") or []
        except LabtoolsError:
            sets = []
        if sets:
            return ",".join(sets[-1] if len(sets[0]) < 2 else sets[0])
        hosts = self.topo.hosts
        return f"{hosts[0]}:{hosts[-1]}" if len(hosts) >= 2 else ""

    def _on_src(self, _change: Any = None) -> None:
        keep = self.dst.value
        options = self._destinations(self.src.value)
        self.dst.options = options
        self.dst.value = keep if keep in options else options[0]

    def _on_test(self, _change: Any = None) -> None:
        flows = self.test.value in FLOW_TESTS
        self.rate.disabled = self.test.value not in UDP_TESTS
        self.flows.disabled = not flows
        self.src.disabled = self.dst.disabled = flows

    def settings(self) -> RunSettings:
        """The run the panel's inputs describe."""
        udp = self.test.value in UDP_TESTS
        return RunSettings(self.test.value, self.src.value, self.dst.value,
                           float(self.duration.value), float(self.rate.value) if udp else None,
                           self.flows.value.strip())

    def expected_seconds(self, s: RunSettings) -> float:
        """About how long a run takes (s), for the progress bar."""
        return s.duration_s + STARTUP_S

    # --- running ---------------------------------------------------------------------------
    def _get_lab(self) -> Any:
        if self._lab is None:
            self._lab = self._lab_source()
        return self._lab

    @property
    def busy(self) -> bool:
        """True while a measurement started from the panel is still running."""
        return self._worker is not None and self._worker.is_alive()

    def run(self) -> None:
        """Run the chosen test (what the Run button does); returns when it has finished.

        Refused while an earlier run is still measuring (after Ctrl-C it finishes on its
        own, within its time-out)."""
        if self.busy:
            self._fail("the previous measurement is still running: wait until it finishes")
            return
        s = self.settings()
        runner = self.runners[s.test]
        box: Dict[str, Any] = {}

        def work() -> None:
            try:
                box["result"] = runner(self._get_lab(), s)
            except Exception as err:  # noqa: BLE001 - reported in the panel, below
                box["error"], box["trace"] = err, traceback.format_exc()
            finally:
                self.run_button.disabled = False  # the measurement is over, whoever waits

        self.run_button.disabled = True
        self.progress.value, self.progress.bar_style = 0, ""
        what = f"{s.test} {s.flows}" if s.test in FLOW_TESTS else f"{s.test} {s.src} → {s.dst}"
        started, expected = time.monotonic(), self.expected_seconds(s)
        self._worker = threading.Thread(target=work, name="labtools-panel-run", daemon=True)
        self._worker.start()
        try:
            while self._worker.is_alive():
                elapsed = time.monotonic() - started
                self.progress.value = min(95, int(100 * elapsed / expected))
                self.status.value = html.escape(
                    f"running {what}: {elapsed:.0f} s of about {expected:.0f} s")
                self._worker.join(0.25)
        except KeyboardInterrupt:
            self._fail("interrupted: the measurement finishes on its own (it has a time-out); "
                       "Run is available again when it has")
            raise
        self._finish(box, what, time.monotonic() - started)

    def _finish(self, box: Dict[str, Any], what: str, elapsed: float) -> None:
        if "result" in box:
            self.last_result = box["result"]
            self.show(box["result"])
            self.progress.value, self.progress.bar_style = 100, "success"
            self.status.value = html.escape(f"done: {what} in {elapsed:.1f} s")
        elif isinstance(box["error"], LabtoolsError):
            self.output.outputs = ()
            self._fail(str(box["error"]).strip().splitlines()[0])
        else:  # a bug in the kit: keep the traceback where it can be seen
            self.output.outputs = (_display({"text/plain": box["trace"]}),)
            self._fail(f"internal error ({type(box['error']).__name__}): please report it "
                       "with the details below")

    def _fail(self, message: str) -> None:
        self.progress.bar_style = "danger"
        self.status.value = f'<span style="{ERROR_STYLE}">✗ {html.escape(message)}</span>'

    def show(self, result: Any) -> None:
        """Replace the output area with the result's verdicts, its plot, and (folded) the
        exact command of each tool run with what it printed."""
        from labtools.teach.plots import plot_measurement
        from labtools.teach.tool_runs import RunsDisplay

        table = result.verdicts_table
        items = [_display({"text/html": verdicts_html(table), "text/plain": table.to_string()})]
        png = base64.b64encode(figure_png(lambda ax: plot_measurement(result, ax))).decode("ascii")
        items.append(_display({"image/png": png, "text/plain": "<plot>"}))
        runs = RunsDisplay((result,))
        items.append(_display({"text/html": runs.html, "text/plain": runs.text}))
        self.output.outputs = tuple(items)


# --- compute it first ---------------------------------------------------------------------------
class AnswerBox(w.VBox):
    """Type a number, press Check: :func:`labtools.judge.exercises.check` says if it is right and
    explains a wrong answer. ``question_id`` is ``"rtt_ms h1 h4"`` (see
    :mod:`labtools.judge.exercises`)."""

    def __init__(self, question_id: str, topo: Topology) -> None:
        from labtools.judge.exercises import parse_question_id, question_text

        self.question, self.kwargs = parse_question_id(question_id)
        self.topo = topo
        self.feedback: Any = None
        self.answer = w.Text(placeholder="your answer", continuous_update=False,
                             layout=w.Layout(width="160px"))
        self.check_button = w.Button(description="Check", icon="check")
        self.result = w.HTML(value="")
        self.check_button.on_click(lambda _button: self.check())
        self.answer.observe(lambda _change: self.check(), names="value")  # Enter or leaving
        super().__init__([w.HBox([w.Label(question_text(question_id)), self.answer,
                                  self.check_button]), self.result])

    def check(self) -> None:
        """Check the typed answer and show the feedback."""
        from labtools.judge.exercises import check

        text = self.answer.value.strip()
        try:
            value = float(text)
        except ValueError:
            self.feedback = None
            self.result.value = (f'<span style="{ERROR_STYLE}">write a plain number (digits, a '
                                 'point, e.g. 60 or 2.5e5), without units or commas</span>')
            return
        try:
            self.feedback = check(self.question, value, self.topo, **self.kwargs)
        except LabtoolsError as err:
            self.feedback = None
            self.result.value = f'<span style="{ERROR_STYLE}">{html.escape(str(err))}</span>'
            return
        style = VERDICT_STYLE["ok"] if self.feedback.correct else ERROR_STYLE
        mark = "✓" if self.feedback.correct else "✗"
        message = html.escape(self.feedback.message)
        self.result.value = f'<span style="{style}">{mark} {message}</span>'
