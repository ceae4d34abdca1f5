"""How many submissions ``labtools autograde`` grades at once when not told:
:data:`labtools.instructor.class_grading.JOBS_PER_CPU` workers for each CPU (a submission keeps a
CPU busy about a third of its time: lab 7 waits on its paced transfers), no more than the
available memory holds (:data:`labtools.instructor.class_grading.WORKER_MEMORY_MIB` each)."""

from __future__ import annotations

from labtools.instructor import class_grading
from labtools.system import procfs


def _machine(monkeypatch, tmp_path, cpus: int, available_kib: int) -> None:
    monkeypatch.setattr(class_grading.os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       99999999 kB\nMemFree:          1000 kB\n"
                       f"MemAvailable:   {available_kib} kB\n")
    monkeypatch.setattr(procfs, "MEMINFO", str(meminfo))


def test_jobs_per_cpu_workers_for_each_cpu_when_the_memory_holds_them(monkeypatch, tmp_path):
    _machine(monkeypatch, tmp_path, cpus=2, available_kib=24 * 1024 * 1024)
    assert class_grading.default_jobs() == 2 * class_grading.JOBS_PER_CPU


def test_no_more_workers_than_the_memory_holds_and_at_least_one(monkeypatch, tmp_path):
    per_worker_kib = class_grading.WORKER_MEMORY_MIB * 1024
    _machine(monkeypatch, tmp_path, cpus=8, available_kib=2 * per_worker_kib + 100)
    assert class_grading.default_jobs() == 2
    _machine(monkeypatch, tmp_path, cpus=8, available_kib=per_worker_kib // 2)
    assert class_grading.default_jobs() == 1


def test_without_meminfo_the_cpus_decide(monkeypatch, tmp_path):
    _machine(monkeypatch, tmp_path, cpus=4, available_kib=1)
    monkeypatch.setattr(procfs, "MEMINFO", str(tmp_path / "no-such-file"))
    assert class_grading.default_jobs() == 4 * class_grading.JOBS_PER_CPU
