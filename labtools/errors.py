"""Every exception the kit raises on purpose, in one place.

The command line catches :class:`LabtoolsError` and prints its one-line message; anything
else is a bug in the kit and keeps its traceback.
"""

from __future__ import annotations


class LabtoolsError(Exception):
    """Base of the kit's errors. ``str(err)`` is a one-line reason for the user."""


class TopologyError(LabtoolsError):
    """A topology is invalid: unknown node, duplicate name, bad rate, delay or loss."""


class NoRouteError(TopologyError):
    """Two nodes have no path between them."""


class UnknownNodeError(TopologyError):
    """A name that is not a node of the topology (or not a host where a host is needed)."""


class InputError(LabtoolsError):
    """A bad argument: a rate, duration, count or option the kit refuses before running."""


class ParseError(LabtoolsError):
    """A tool's output could not be parsed.

    Attributes:
        tool: which tool's output it was (``ping``, ``iperf3``...).
        reason: what was missing or malformed.
    """

    def __init__(self, tool: str, reason: str) -> None:
        self.tool = tool
        self.reason = reason
        super().__init__(f"cannot parse {tool} output: {reason}")


class ToolError(LabtoolsError):
    """A measurement tool failed (non-zero exit, error message, server gone)."""


class ProbeTimeout(ToolError):
    """A probe did not finish within its time-out (hung or killed server)."""


class EnvironmentProblem(LabtoolsError):
    """This machine lacks something the kit needs (root, Mininet, netem, a VM kernel)."""


class VMError(LabtoolsError):
    """The VM runner could not boot or run the command."""


class StoreError(LabtoolsError):
    """The results store could not be read or written."""


class ReplayError(LabtoolsError):
    """A replayed (graded) notebook asked for a measurement its results file does not hold."""
