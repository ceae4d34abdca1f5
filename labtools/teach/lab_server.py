"""The JupyterLab server's kernel manager, safe while a kernel is starting.

jupyter_server (2.21) lists a kernel as soon as its process is launched but gives it a
``last_activity`` only once the start has finished; a ``GET /api/kernels`` in between fails
with a TraitError (500). JupyterLab polls that address every few seconds, and when the poll
fails while it opens a notebook, it gives up starting the notebook's kernel and shows the
"Select Kernel" dialog. Natively the window is milliseconds; in the lab VM under software
emulation a kernel takes 20 s to start and a student meets the dialog on first open.

``make lab`` and the lab VM's service start JupyterLab with
``--ServerApp.kernel_manager_class=labtools.teach.lab_server.LabKernelManager``.
"""

from __future__ import annotations

from typing import Any, Dict

from jupyter_server._tz import utcnow
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager


class LabKernelManager(AsyncMappingKernelManager):
    """A kernel still starting counts as active from the moment it is listed."""

    def kernel_model(self, kernel_id: str) -> Dict[str, Any]:
        """The kernel's JSON model; a starting kernel's last activity is now."""
        kernel = self._kernels.get(kernel_id)
        if kernel is not None and not kernel.trait_has_value("last_activity"):
            kernel.last_activity = utcnow()
        model: Dict[str, Any] = super().kernel_model(kernel_id)
        return model
