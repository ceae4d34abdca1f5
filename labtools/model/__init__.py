"""The pure model: topologies, addresses, routes, expected values and fair shares.

No root, no Mininet, no pandas: everything here is plain Python computed from a topology.
Imports only :mod:`labtools.errors` and this package.
"""
