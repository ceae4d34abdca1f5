"""Which topology a lab is built on, as one value: :class:`TopologyChoice`.

A notebook's lab, the grading that replays it and the values its questions print all
speak of the same choice: a topology (a kit topology's name, or a file's path) with its
parameters, the student's variant and the rate scale the machine asked for. It travels
as this object from where it is made (:func:`labtools.teach.notebook.open_lab`, from the
notebook's arguments and the settings) to where grading binds it to a student
(:mod:`labtools.results.ownership`); text is read into it only where a choice comes as
text (a spec the user typed: :meth:`TopologyChoice.from_spec`), and :attr:`spec` writes it
back as that text for people to read.

The variant is text (``007`` is not student 7's network) and checked by the one rule of
:func:`labtools.model.json_topology.check_variant`; the rate scale by
:func:`labtools.model.scaling.check_scale`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from labtools.errors import TopologyError
from labtools.model import catalog, scaling
from labtools.model.json_topology import KIT_PARAMS, VARIANT, check_variant
from labtools.model.topology import Topology

__all__ = ["TopologyChoice", "choose"]


@dataclass(frozen=True)
class TopologyChoice:
    """A topology as a lab asks for it, before it is built.

    Attributes:
        name: a kit topology's name (``portfolio``) or a topology file's path.
        params: the topology's own parameters, as ``(key, value)`` pairs in the order
            given (hashable: a choice is a key of the answer keys' caches); neither the
            variant nor the rate scale.
        variant: the variant ID the network is drawn from ('' for the reference values).
        rate_scale: the factor every link rate is scaled by (None: as the topology has it).
    """

    name: str
    params: Tuple[Tuple[str, Any], ...] = ()
    variant: str = ""
    rate_scale: Optional[float] = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise TopologyError(f"a topology is chosen by its name or file, not {self.name!r}")
        keys = [key for key, _value in self.params]
        mixed = [key for key in keys if key in KIT_PARAMS]
        if mixed:
            raise TopologyError(f"topology parameter {mixed[0]!r} is a field of the choice, "
                                "not one of the topology's own parameters")
        if len(set(keys)) != len(keys):
            raise TopologyError(f"a topology parameter of {self.name} is given twice")
        if self.variant != "":  # the same words as a topology file's params get
            check_variant(self.variant, "topology params")
        if self.rate_scale is not None:
            object.__setattr__(self, "rate_scale", scaling.check_scale(self.rate_scale))

    @classmethod
    def of(cls, name: str, params: Optional[Mapping[str, Any]] = None) -> "TopologyChoice":
        """The choice of topology ``name`` with ``params``, which may hold a variant and a
        rate scale (as a built topology's ``params`` do)."""
        own = dict(params or {})
        variant = own.pop(VARIANT, None)
        scale = own.pop(scaling.PARAMETER, None)
        return cls(name, tuple(own.items()), "" if variant is None else variant, scale)

    @classmethod
    def from_spec(cls, spec: str) -> "TopologyChoice":
        """The choice a spec's text names (``dumbbell,pairs=3,variant=s1``; see
        :mod:`labtools.model.catalog`): for text a user typed, and nowhere else.

        Raises:
            TopologyError: a spec :func:`labtools.model.catalog.split_spec` refuses, or a
                variant or rate scale out of their rules.
        """
        return cls.of(*catalog.split_spec(spec))

    @classmethod
    def of_topology(cls, topo: Topology) -> "TopologyChoice":
        """The choice a built (or recorded) topology was made from: its name and params."""
        return cls.of(topo.name, topo.params)

    def with_variant(self, variant: str) -> "TopologyChoice":
        """This choice on the network of ``variant`` ('' for the reference values)."""
        return replace(self, variant=variant)

    def with_rate_scale(self, factor: Optional[float]) -> "TopologyChoice":
        """This choice with every rate scaled by ``factor`` (None: unscaled)."""
        return replace(self, rate_scale=factor)

    def all_params(self) -> Dict[str, Any]:
        """The parameters the topology is built with: its own, then the variant and the
        rate scale when set (what a spec's text gave)."""
        out = dict(self.params)
        if self.variant:
            out[VARIANT] = self.variant
        if self.rate_scale is not None:
            out[scaling.PARAMETER] = self.rate_scale
        return out

    @property
    def spec(self) -> str:
        """This choice as the text of a spec (``portfolio,variant=s1,rate_scale=0.5``), for
        people to read: code passes the choice itself."""
        items = [f"{key}={value}" for key, value in self.params]
        items += [f"{VARIANT}={self.variant}"] if self.variant else []
        items += [] if self.rate_scale is None else [f"{scaling.PARAMETER}={self.rate_scale:g}"]
        return ",".join([self.name, *items])

    def __str__(self) -> str:
        return self.spec

    def build(self) -> Topology:
        """The topology, loaded, validated and route-checked
        (:func:`labtools.model.catalog.build_topology`)."""
        return catalog.build_topology(self.name, self.all_params())

    def build_kit(self) -> Topology:
        """The kit's own topology of this choice, built in this process (its file imported
        once, :func:`labtools.model.catalog.kit_module`): what the answer keys and the
        question values build by the hundred.

        Raises:
            TopologyError: not one of the kit's topologies, or a topology it cannot build.
        """
        own = dict(self.params)
        if self.variant:
            own[VARIANT] = self.variant
        topo = catalog.kit_module(self.name).topology(**own)
        if not isinstance(topo, Topology):
            raise TopologyError(f"{self.name}.topology() did not return a Topology")
        return topo if self.rate_scale is None else scaling.scale_rates(topo, self.rate_scale)


def choose(topology: Union[str, TopologyChoice]) -> TopologyChoice:
    """``topology`` as a choice: as it is, or read from the text of a spec (the Python
    API's argument, text a user wrote)."""
    if isinstance(topology, TopologyChoice):
        return topology
    return TopologyChoice.from_spec(topology)
