"""The class report on a class of real results files (tests/fixtures/grading): a complete
submission (student1), a lab partner handing in the same file (student2, bound to student1's
variant by the course's list), a submission without results (student3), a copy of
student1's file (student4), and a submission measured on another student's variant
(student5: the first real recording of the fixture, none of its runs the same as
student1's). Expected values are checked against the kit's calculator for each student's
own variant (labtools.model.expect, the variant topologies), not against typed numbers."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from labtools.instructor.class_data import collect
from labtools.instructor.class_report import make_report
from labtools.model.catalog import from_dict, load_topology
from labtools.model.expect import expect_pair, tcp_goodput_ceiling_mbps
from labtools.model.fairness import max_min_shares, parse_flows
from labtools.results.store import ResultStore
from tests.conftest import FIXTURES, run_cli

RECORDED = FIXTURES / "grading" / "results" / "labtools.sqlite"
EARLIER = FIXTURES / "grading" / "earlier" / "results" / "labtools.sqlite"
RECORDED_VARIANT = json.loads((FIXTURES / "grading" / "capture.json").read_text())["variant"]
#: student -> the results file they hand in (None: none)
CLASS = {"student1": RECORDED, "student2": RECORDED, "student3": None, "student4": RECORDED,
         "student5": EARLIER}
#: each student's own variant: their id, student2's by the course's list
OWN = {"student1": "student1", "student2": RECORDED_VARIANT, "student4": "student4",
       "student5": "student5"}


def make_class(root: Path, files=CLASS, listing: str = f"student2,{RECORDED_VARIANT}\n") -> Path:
    """``root/submitted/STUDENT/labs`` as nbgrader collects it, and the course's list."""
    for student, results in files.items():
        folder = root / "submitted" / student / "labs"
        folder.mkdir(parents=True)
        (folder / "00-getting-started.ipynb").write_text("{}")
        if results is not None:
            (folder / "results").mkdir()
            shutil.copy(results, folder / "results" / "labtools.sqlite")
    (root / "labtools-variants.csv").write_text(listing)
    return root / "submitted"


@pytest.fixture(scope="module")
def submitted(tmp_path_factory) -> Path:
    return make_class(tmp_path_factory.mktemp("course"))


@pytest.fixture(scope="module")
def data(submitted):
    return collect(submitted)


def test_the_fixtures_are_what_the_class_needs():
    assert RECORDED_VARIANT == "student1"  # student1 measured their own network
    ids = [ResultStore(f, create=False).query("SELECT raw_output FROM runs") for f in (RECORDED,
                                                                                       EARLIER)]
    assert not {r[0] for r in ids[0]} & {r[0] for r in ids[1]}


def test_every_expected_value_is_the_kits_for_the_students_own_variant(data):
    table = data.measurements
    checked = 0
    for student, variant in OWN.items():
        topo = load_topology(f"portfolio,variant={variant}")
        mine = table[table["student"] == student]
        assert set(mine["variant"]) == {variant}
        pings = mine[(mine["probe"] == "ping") & (mine["metric"] == "rtt_min") &
                     mine["case"].isin(["intro", "link", "path"])]
        tcp = mine[(mine["probe"] == "iperf3") & (mine["metric"] == "receiver_rate") &
                   (mine["case"] == "path") & ~mine["measurement"].str.contains("window")]
        assert len(pings) >= 7 and len(tcp) >= 2, student
        for row in pings.itertuples():
            src, dst = row.pair.split("-")
            assert row.expected == pytest.approx(expect_pair(topo, src, dst).rtt_ms)
        for row in tcp.itertuples():
            src, dst = row.pair.split("-")
            assert row.expected == pytest.approx(expect_pair(topo, src, dst).tcp_limit_mbps)
        shares = mine[(mine["case"] == "mux") & mine["metric"].str.startswith("share ")]
        for row in shares.itertuples():
            flows = parse_flows(row.pair, topo)
            want = {f"{f.src}-{f.dst}": tcp_goodput_ceiling_mbps(s.share_mbps)
                    for f, s in zip(flows, max_min_shares(topo, flows))}
            assert row.expected == pytest.approx(want[row.metric[len("share "):]])
        checked += len(pings) + len(tcp) + len(shares)
    assert checked > 60


def test_the_measured_values_are_the_recorded_ones_and_a_copy_keeps_them(data):
    table = data.measurements
    store = ResultStore(RECORDED, create=False)
    recorded = store.runs(case="intro", tool="ping")["summary.min_ms"].iloc[-1]
    intro = table[(table["case"] == "intro") & (table["metric"] == "rtt_min")]
    by_student = intro.set_index("student")
    assert by_student.loc["student1", "measured"] == pytest.approx(recorded)
    assert by_student.loc["student4", "measured"] == pytest.approx(recorded)  # the copy
    # ...judged against the copier's own network, which is another one
    assert by_student.loc["student4", "expected"] != by_student.loc["student1", "expected"]
    assert by_student.loc["student1", "ratio"] == pytest.approx(
        recorded / by_student.loc["student1", "expected"], abs=1e-4)


def test_the_copy_is_found_and_lab_partners_are_not_copies(data):
    pairs = {(r.student_a, r.student_b): r for r in data.copies.itertuples()}
    assert set(pairs) == {("student1", "student2"), ("student1", "student4"),
                          ("student2", "student4")}
    runs = ResultStore(RECORDED, create=False).query(
        "SELECT COUNT(*) FROM runs WHERE status = 'ok'")[0][0]
    for pair, row in pairs.items():
        assert row.identical_runs == row.runs_a == row.runs_b == runs
        assert row.partners == (pair == ("student1", "student2"))


def test_submissions_not_measured_on_their_own_network_are_flagged(data):
    subs = {s.student: s for s in data.submissions}
    assert not subs["student1"].problems and not subs["student2"].problems
    assert "no results file" in subs["student3"].note
    for student in ("student4", "student5"):
        cases = set(ResultStore(subs[student].results, create=False).runs()["case"])
        assert set(subs[student].problems) == cases
        assert all(f"variant '{RECORDED_VARIANT}'" in p and f"{student}'s variant is "
                   f"'{student}'" in p for p in subs[student].problems.values())
        rows = data.measurements[data.measurements["student"] == student]
        assert rows["flagged"].all() and set(rows["recorded_variant"]) == {RECORDED_VARIANT}
    assert not data.measurements[data.measurements["student"] == "student1"]["flagged"].any()


def test_the_calibrations_are_the_recorded_ones(data):
    store = ResultStore(RECORDED, create=False)
    mine = data.calibrations[data.calibrations["student"] == "student1"].set_index("case")
    for case, row in mine.iterrows():
        runs = store.runs(case=case)
        latest = runs[runs["session_id"] == runs.iloc[-1]["session_id"]].iloc[0]
        machine = json.loads(latest["context_json"])["machine"]
        assert row["forward_mbps"] == machine["forward_mbps"], case
        assert row["too_slow"] == (machine["forward_mbps"] < row["needed_mbps"])


def test_a_machine_too_slow_for_the_lab_is_named(tmp_path):
    """A derived file: student1's with its calibrations edited to a machine forwarding
    50 Mbit/s: too slow where the lab's links carry more at once than it forwards (with the
    kit's headroom), as the portfolio's do."""
    from labtools.judge.policy import CAPACITY_HEADROOM
    from labtools.model.scaling import peak_load_mbps

    slow = tmp_path / "slow.sqlite"
    shutil.copy(RECORDED, slow)
    con = sqlite3.connect(slow)
    con.execute("UPDATE runs SET context_json = json_set(context_json, "
                "'$.machine.forward_mbps', 50.0)")
    con.commit()
    con.close()
    folder = make_class(tmp_path / "course", {"student1": slow}, listing="")
    data, written, lines = make_report(folder, tmp_path / "out")
    store = ResultStore(slow, create=False)
    for row in data.calibrations.itertuples():
        recorded = store.runs(case=row.case)["topology_json"].iloc[-1]
        load = peak_load_mbps(from_dict(json.loads(recorded)))
        assert row.peak_load_mbps == load and row.too_slow == (50 * CAPACITY_HEADROOM < load)
    portfolio = peak_load_mbps(load_topology(f"portfolio,variant={RECORDED_VARIANT}"))
    assert portfolio > 50 and data.calibrations["too_slow"].any()
    text = "\n".join(lines)
    assert "too slow for a lab's links: 1" in text
    assert "student1 (labs): " in text and (f" forwards 50 Mbit/s, the links carry "
                                            f"{portfolio:.0f} at once: intro") in text


def test_the_report_writes_tables_plots_and_a_summary(submitted, tmp_path):
    from matplotlib.image import imread

    data, written, lines = make_report(submitted, tmp_path / "report")
    names = {p.name for p in written}
    labs = list(dict.fromkeys(data.measurements["case"]))
    keys = {f"answer-key-{student}.html" for student in CLASS}
    assert {"measurements.csv", "calibrations.csv", "copies.csv", "submissions.csv",
            "verdicts.png", "calibrations.png", "index.html"} | keys | \
        {f"lab-{lab}.png" for lab in labs} == names
    for png in (p for p in written if p.suffix == ".png"):
        height, width = imread(png).shape[:2]
        assert width >= 1200 and height >= 500, png  # slide-sized at 150 dpi
    import pandas as pd

    table = pd.read_csv(tmp_path / "report" / "measurements.csv")
    assert len(table) == len(data.measurements)
    text = "\n".join(lines)
    assert "student1 (labs) and student4 (labs): " in text and ": a copy" in text
    assert "student1 (labs) and student2 (labs)" in text and "lab partners" in text
    assert "student3 (labs): no results file" in text
    own = data.measurements[~data.measurements["flagged"]]
    for lab in labs:
        part = own[own["case"] == lab]
        share = 100 * (part["verdict"] == "inconclusive").mean()
        assert f"  {lab}: 2 student(s); inconclusive {share:.0f}% of {len(part)} judged" in text
    subs = pd.read_csv(tmp_path / "report" / "submissions.csv").set_index("student")
    assert list(subs.index) == list(CLASS)
    for student in OWN:
        verdicts = data.measurements[data.measurements["student"] == student]["verdict"]
        assert subs.loc[student, "judged"] == len(verdicts) > 0
        assert subs.loc[student, "inconclusive_pct"] == pytest.approx(
            100 * (verdicts == "inconclusive").mean(), abs=0.05)


def test_the_command_line(tmp_path):
    submitted = make_class(tmp_path / "course", {"student1": RECORDED, "student4": RECORDED},
                           listing="")
    done = run_cli(["class-report", str(submitted)])  # into the course folder by default
    assert done.returncode == 0, done.stderr
    assert "student1 (labs) and student4 (labs): " in done.stdout and "a copy" in done.stdout
    assert (tmp_path / "course" / "class-report" / "lab-path.png").is_file()
    for args, reason in (([str(tmp_path / "none")], "is not a folder"),
                         ([str(tmp_path / "course" / "class-report")], "no submissions in"),
                         ([str(tmp_path / "course")], "is a course folder: give its"),
                         ([str(submitted), "--variants", str(tmp_path / "x.csv")],
                          "no such file")):
        bad = run_cli(["class-report", *args, "--out", str(tmp_path / "o")])
        assert bad.returncode == 2 and reason in bad.stderr
        assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_each_submission_links_to_its_own_answer_key(submitted, tmp_path):
    """The report's index and submissions.csv link each submission to the key of the
    student's own variant: the page the answer-key command writes for that student."""
    import pandas as pd

    from labtools.instructor.answer_key_page import render_page
    from labtools.instructor.answer_keys import keys_for

    data, _written, _lines = make_report(submitted, tmp_path / "report")
    subs = pd.read_csv(tmp_path / "report" / "submissions.csv")
    index = (tmp_path / "report" / "index.html").read_text()
    for sub in data.submissions:
        link = subs.set_index("student").loc[sub.student, "answer_key"]
        assert link == f"answer-keys/answer-key-{sub.student}.html"
        assert f'href="{link}"' in index
        page = (tmp_path / "report" / link).read_text()
        assert page == render_page(sub.student, sub.binding.describe(),
                                   keys_for(sub.binding.variant))

