"""The JupyterLab server's kernel manager, safe while a kernel is starting.

jupyter_server (2.21) lists a kernel as soon as its process is launched but gives it a
``last_activity`` only once the start has finished; a ``GET /api/kernels`` in between fails
with a TraitError (500). JupyterLab polls that address every few seconds, and when the poll
fails while it opens a notebook, it gives up starting the notebook's kernel and shows the
"Select Kernel" dialog. Natively the window is milliseconds; in the lab VM under software
emulation a kernel takes 20 s to start and a student meets the dialog on first open.

A kernel that boots the lab VM first answers late: 52 s on this machine when idle, 98 s
with three busy processes beside it, over 120 s in a CI run. jupyter_server waits
``kernel_info_timeout`` (60 s) for the first answer before it opens the notebook's
websocket, and as long again for the kernel's first message after; past both it closes the
websocket, and the notebook shows a connection lost while the kernel is still booting. This
manager waits :data:`KERNEL_INFO_TIMEOUT_S`.

``make lab``, the lab image, the hub's student servers and the lab VM's service start
JupyterLab with
``--ServerApp.kernel_manager_class=labtools.teach.lab_server.LabKernelManager``.

``make lab`` starts JupyterLab through :func:`serve_lab` (``python -m
labtools.teach.lab_server ARGS``), which is ``jupyter lab ARGS`` without one step an
offline lab never uses: where Node.js is installed, importing JupyterLab runs
``node yarn.js config`` to learn npm's registry (for building extensions), 0.5 s on this
machine and 18.6 s in the lab VM under software emulation, before the server starts.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional

from jupyter_server._tz import utcnow
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from traitlets import Float

#: seconds JupyterLab's server waits for a starting kernel's first answer (twice: before and
#: after it opens the websocket); a kernel in the lab VM boots the VM under software emulation
KERNEL_INFO_TIMEOUT_S = 600.0


class LabKernelManager(AsyncMappingKernelManager):
    """A kernel still starting counts as active from the moment it is listed, and a kernel
    that boots the lab VM has :data:`KERNEL_INFO_TIMEOUT_S` to answer."""

    kernel_info_timeout = Float(KERNEL_INFO_TIMEOUT_S, config=True,
                                help="seconds to wait for a starting kernel's first answer")

    def kernel_model(self, kernel_id: str) -> Dict[str, Any]:
        """The kernel's JSON model; a starting kernel's last activity is now."""
        kernel = self._kernels.get(kernel_id)
        if kernel is not None and not kernel.trait_has_value("last_activity"):
            kernel.last_activity = utcnow()
        model: Dict[str, Any] = super().kernel_model(kernel_id)
        return model


def _no_yarn_config(logger: Any = None) -> Dict[str, Dict[str, Any]]:
    """What JupyterLab's ``_yarn_config`` returns where Node.js is not installed."""
    return {"yarn config": {}, "npm config": {}}


def skip_yarn_config() -> None:
    """Make JupyterLab, imported after this, use its default npm registry without asking
    yarn (as where Node.js is not installed)."""
    import jupyterlab.commands as lab_commands

    if hasattr(lab_commands, "_yarn_config"):  # a JupyterLab without it: nothing to skip
        lab_commands._yarn_config = _no_yarn_config


def serve_lab(argv: Optional[List[str]] = None) -> None:
    """Run ``jupyter lab ARGV`` (``sys.argv[1:]`` by default) after :func:`skip_yarn_config`."""
    skip_yarn_config()
    from jupyterlab.labapp import LabApp

    LabApp.launch_instance(argv=sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    serve_lab()
