"""The lab runtime: the Mininet network (:mod:`.network`, the only module that imports
Mininet), the lab session, probes that measure, judge and save, and the test cases."""
