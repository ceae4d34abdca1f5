"""What a lab notebook calls: its one setup call, and its checks of the network.

    from labtools.teach.notebook import open_lab, check_network
    lab = open_lab("path")      # quick mode, durations, results file, stop on exit
    lab.start()                 # the network (and this machine's calibration)

:func:`open_lab` reads the notebook's settings from one place: ``LABTOOLS_QUICK=1`` for the
short durations CI uses (:func:`labtools.judge.policy.durations`). Measurements go to
``results/labtools.sqlite`` in the notebook's own folder (the folder nbgrader collects),
and the network stops when the notebook's kernel exits, whatever happens.

:func:`check_network` is how a notebook checks the network rather than the student: it
shows the kit's verdicts and fails only on a result the network cannot produce
(``invalid``); ``suspicious`` and ``inconclusive`` are explained, not held against anyone.
"""

from __future__ import annotations

import atexit
import os
from typing import TYPE_CHECKING, Any, Iterable, List, Union

from labtools.judge import policy
from labtools.lab.session import LabSession

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: where a notebook keeps its measurements, relative to its own folder
RESULTS_FILE = "results/labtools.sqlite"
QUICK_VARIABLE = "LABTOOLS_QUICK"


def quick_mode() -> bool:
    """True when ``LABTOOLS_QUICK=1`` asks for the short durations (CI)."""
    return os.environ.get(QUICK_VARIABLE) == "1"


def open_lab(case: str, topology: str = "portfolio") -> LabSession:
    """The lab of one notebook, not started yet (``lab.start()`` builds the network).

    Args:
        case: what the notebook measures (``intro``, ``udp``, ``link``, ``path``, ``mux``,
            ``parallel``, ``pitfalls``); saved with every measurement.
        topology: the topology spec (the reference topology by default).
    """
    lab = LabSession(topology, results=RESULTS_FILE, case=case,
                     durations=policy.durations(quick_mode()))
    atexit.register(lab.stop)  # the network also stops if the notebook ends early
    return lab


def _verdicts(results: Iterable[Any]) -> List[Any]:
    rows = []
    for result in results:
        label = getattr(result, "src", "") and f"{result.src}-{result.dst} "
        tool = getattr(result, "tool", "") or type(result).__name__
        rows += [(f"{label}{tool}", v) for v in result.verdicts]
    return rows


def check_network(*results: Any) -> str:
    """Check measurements (or sets of flows, or a capacity search) against the physics.

    Prints one line per verdict; raises ``AssertionError`` naming the first ``invalid``
    verdict (a result the network cannot produce). Returns the worst verdict. This checks
    the network and the machine, not the student's answers."""
    rows = _verdicts(results)
    for what, v in rows:
        print(f"{v.verdict.upper():<13} {what}: {v.metric}: {v.reason}")
    bad = [(what, v) for what, v in rows if v.verdict == policy.INVALID]
    if bad:
        what, v = bad[0]
        raise AssertionError(f"about the network, not your answers: {what}: {v.reason}")
    return policy.worst([v.verdict for _, v in rows])


def verdict_table(*results: Any) -> "pd.DataFrame":
    """The verdicts of several results in one table, each metric named after its result
    (``h1-h4 iperf3 receiver_rate``), ready for ``plots.plot_expected_vs_measured``."""
    import pandas as pd

    from labtools.judge.verdicts import COMPARE_COLUMNS, compare

    frames = []
    for what, v in _verdicts(results):
        row = compare([v])
        row["metric"] = f"{what}: {v.metric}"
        frames.append(row)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COMPARE_COLUMNS)


def describe(lab: Union[LabSession, Any]) -> str:
    """One line on a started lab: its nodes and what this machine adds and carries."""
    topo = lab.topo
    line = f"network up: {', '.join(topo.hosts + topo.routers)}"
    machine = getattr(lab, "machine", None)
    if machine is not None:
        line += f"\n{machine.describe()}"
    return line
