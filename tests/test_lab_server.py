"""JupyterLab's kernel list while a kernel starts (the "Select Kernel" dialog on first open).

A real kernel (ipykernel) is started by jupyter_server's own manager while the kernel list
is read as JupyterLab polls it. jupyter_server's manager fails on a starting kernel; the
kit's does not. Both scripts that start JupyterLab use the kit's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import List, Tuple, Type

import pytest
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from traitlets import TraitError

from labtools.teach.lab_server import KERNEL_INFO_TIMEOUT_S, LabKernelManager

ROOT = Path(__file__).resolve().parents[1]


def list_while_starting(manager_class: Type[AsyncMappingKernelManager]) -> Tuple[int, List]:
    """Start a real kernel; list kernels as often as possible until the start returns."""

    async def run() -> Tuple[int, List]:
        manager = manager_class()
        start = asyncio.ensure_future(manager.start_kernel(kernel_name="python3"))
        failures, listed = 0, []
        while not start.done():
            try:
                listed.append(manager.list_kernels())
            except TraitError:
                failures += 1
            await asyncio.sleep(0)
        kernel_id = await start
        listed.append(manager.list_kernels())
        await manager.shutdown_kernel(kernel_id, now=True)
        return failures, listed

    return asyncio.run(run())


def test_jupyter_servers_manager_fails_on_a_starting_kernel():
    failures, _ = list_while_starting(AsyncMappingKernelManager)
    assert failures > 0  # the race the kit's manager closes; if it is gone upstream, drop ours


def test_the_kits_manager_lists_a_starting_kernel_with_an_activity_time():
    failures, listed = list_while_starting(LabKernelManager)
    assert failures == 0
    started = [kernels for kernels in listed if kernels]
    assert started, "the kernel never appeared in the list"
    for kernels in started:
        assert all(k["last_activity"] and k["name"] == "python3" for k in kernels)


def test_a_kernel_booting_the_lab_vm_has_longer_than_jupyter_servers_minute():
    """The websocket's wait for the first answer is the manager's (jupyter_server reads
    ``multi_kernel_manager.kernel_info_timeout``); over 120 s closed it in a CI run."""
    assert AsyncMappingKernelManager().kernel_info_timeout == 60
    assert LabKernelManager().kernel_info_timeout == KERNEL_INFO_TIMEOUT_S >= 300


@pytest.mark.parametrize("script", ["scripts/lab.sh", "scripts/lab-service.sh",
                                    "deploy/image/bin/labtools-lab",
                                    "deploy/image/bin/labtools-hub-server"])
def test_jupyterlab_is_started_with_the_kits_manager(script):
    option = f"--ServerApp.kernel_manager_class={LabKernelManager.__module__}.LabKernelManager"
    assert option in (ROOT / script).read_text()
