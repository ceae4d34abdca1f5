"""Judging: the policy (warm-up, tolerances, cut-offs), verdicts, the judged measurement
and the compute-it-first checks. Builds on :mod:`labtools.model` and :mod:`labtools.tools`.
"""
