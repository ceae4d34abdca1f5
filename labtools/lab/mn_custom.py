"""The ``topos`` entry of the kit's topology files, for plain ``mn --custom``.

``mn --custom topologies/portfolio.py --topo portfolio`` execs the file and calls
``topos["portfolio"]``; every topology file of the kit gets that entry from
:func:`mininet_topos` instead of repeating it. Importing this module imports neither
Mininet nor the rest of the lab runtime (the kit's pure model loads topology files too).
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from labtools.model.topology import Topology


def mininet_topos(name: str, topology: Callable[..., Topology]) -> Dict[str, Callable[..., Any]]:
    """``{name: build}`` where ``build(*args, switch="lxbr", **kwargs)`` is the Mininet
    ``Topo`` of ``topology(*args, **kwargs)`` (``switch="ovs"``: Open vSwitch bridges), as
    ``mn --custom FILE --topo NAME[,ARGS]`` calls it."""

    def build(*args: Any, switch: str = "lxbr", **kwargs: Any) -> Any:
        from labtools.lab.network import to_mininet_topo

        return to_mininet_topo(topology(*args, **kwargs), switch=switch)

    build.__doc__ = f"The Mininet Topo of the kit's {name!r} topology."
    return {name: build}
