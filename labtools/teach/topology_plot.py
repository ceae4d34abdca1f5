"""Drawing a topology: hosts, routers and switches, shaped links labelled with their shaping.

:func:`draw_topology` takes and returns a matplotlib ``Axes``; :func:`topology_layout` is
the pure, deterministic layout it uses.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from labtools.model.topology import HOST, ROUTER, SWITCH, Link, Topology
from labtools.teach.plots import new_axes

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

NODE_STYLE: Dict[str, Dict[str, Any]] = {
    HOST: dict(marker="o", color="#9ecae1", label="host"),
    ROUTER: dict(marker="s", color="#fdae6b", label="router"),
    SWITCH: dict(marker="D", color="#c7e9c0", label="switch"),
}


def link_label(link: Link) -> str:
    """``L1 40 Mbit/s 10 ms q67``: the link's name and shaping (what is set)."""
    parts = [link.label]
    if link.bw_mbps is not None:
        parts.append(f"{link.bw_mbps:g} Mbit/s")
    if link.delay_ms:
        parts.append(f"{link.delay_ms:g} ms")
    if link.loss_pct:
        parts.append(f"{link.loss_pct:g} % loss")
    if link.queue_pkts is not None:
        parts.append(f"q{link.queue_pkts}")
    return " ".join(parts)


def _farthest(topo: Topology, start: str) -> Tuple[str, Dict[str, Optional[str]]]:
    """Dijkstra from ``start`` where shaped links weigh 10 and others 1: the farthest node
    (first in definition order on ties) and the parent of each reached node."""
    import heapq

    order = {name: i for i, name in enumerate(topo.names())}
    dist: Dict[str, float] = {start: 0.0}
    parent: Dict[str, Optional[str]] = {start: None}
    heap = [(0.0, order[start], start)]
    while heap:
        d, _o, node = heapq.heappop(heap)
        if d > dist[node]:
            continue
        for link in topo.links_of(node):
            nxt, nd = link.other(node), d + (10.0 if link.shaped else 1.0)
            if nd < dist.get(nxt, float("inf")):
                dist[nxt], parent[nxt] = nd, node
                heapq.heappush(heap, (nd, order[nxt], nxt))
    far = max(dist, key=lambda n: (dist[n], -order[n]))
    return far, parent


def _spine(topo: Topology) -> List[str]:
    """The longest path (shaped links weigh most), from the first host's side."""
    first = (topo.hosts or topo.names())[0]
    one, _ = _farthest(topo, first)
    other, parent = _farthest(topo, one)
    spine = [other]
    step = parent[other]
    while step is not None:
        spine.append(step)
        step = parent[step]
    if first in spine and spine.index(first) > len(spine) // 2:
        spine.reverse()
    return spine


def _hanging(topo: Topology, spine: List[str]) -> Dict[str, List[str]]:
    """Breadth-first tree from the spine: each node's children off the spine."""
    children: Dict[str, List[str]] = {n: [] for n in topo.names()}
    seen, queue = set(spine), deque(spine)
    while queue:
        node = queue.popleft()
        for link in topo.links_of(node):
            nxt = link.other(node)
            if nxt not in seen:
                seen.add(nxt)
                children[node].append(nxt)
                queue.append(nxt)
    return children


def topology_layout(topo: Topology) -> Dict[str, Tuple[float, float]]:
    """Deterministic node positions: the longest path (shaped links weigh most) runs left to
    right at y = 0, starting from the side of the first host; every other node hangs below
    the spine node it is nearest to, subtrees side by side."""
    spine = _spine(topo)
    children = _hanging(topo, spine)

    def width(node: str) -> int:
        return max(1, sum(width(c) for c in children[node]))

    pos: Dict[str, Tuple[float, float]] = {}

    def place(node: str, left: float, depth: int) -> None:
        pos[node] = (left + width(node) / 2, -depth)
        for child in children[node]:
            place(child, left, depth + 1)
            left += width(child)

    cursor = 0.0
    for i, node in enumerate(spine):
        if i and any(lk.shaped for lk in topo.links_of(node) if lk.joins(node, spine[i - 1])):
            cursor += 1.5  # room for the link's label
        span = max(1, sum(width(c) for c in children[node]))
        left = cursor
        for child in children[node]:
            place(child, left, 1)
            left += width(child)
        pos[node] = (cursor + span / 2, 0.0)
        cursor += span
    for index, name in enumerate(n for n in topo.names() if n not in pos):
        pos[name] = (float(index), 1.0)  # not connected: a row above
    return pos


def draw_topology(topo: Topology, ax: Optional["Axes"] = None) -> "Axes":
    """The topology: hosts (circles), routers (squares), switches (diamonds); shaped links
    thick and labelled with rate, delay and queue (``L1 40 Mbit/s 10 ms q67``)."""
    pos = topology_layout(topo)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    size = (max(6.0, 0.9 * (max(xs) - min(xs) + 2)), 1.5 + 1.3 * (max(ys) - min(ys) + 1))
    ax = new_axes(ax, size)
    for link in topo.links:
        (x1, y1), (x2, y2) = pos[link.a], pos[link.b]
        style: Dict[str, Any] = dict(color="tab:red", linewidth=3, zorder=1) if link.shaped \
            else dict(color="grey", linewidth=1, zorder=1)
        ax.plot([x1, x2], [y1, y2], **style)
        if link.shaped:
            ax.text((x1 + x2) / 2, (y1 + y2) / 2 + 0.18, link_label(link), ha="center",
                    va="bottom", fontsize="small", zorder=3,
                    bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1))
    for kind, style in NODE_STYLE.items():
        names = topo.names(kind)
        if names:
            ax.scatter([pos[n][0] for n in names], [pos[n][1] for n in names], s=650,
                       marker=style["marker"], color=style["color"], edgecolors="black",
                       zorder=2, label=style["label"])
            for n in names:
                ax.text(pos[n][0], pos[n][1], n, ha="center", va="center", fontsize="small",
                        zorder=4)
    ax.set_xlim(min(xs) - 1, max(xs) + 1)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.9)
    ax.set_axis_off()
    from labtools.model.scaling import rate_note

    note = f"\n{rate_note(topo)}" if rate_note(topo) else ""
    ax.set_title(f"Topology {topo.name}: shaped links in red (rate, one-way delay, queue in "
                 f"packets){note}", fontsize="medium")
    ax.legend(loc="upper right", fontsize="small", markerscale=0.4, labelspacing=1.2)
    return ax
