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

from labtools.teach.lab_server import LabKernelManager

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


@pytest.mark.parametrize("script", ["scripts/lab.sh", "scripts/lab-service.sh"])
def test_jupyterlab_is_started_with_the_kits_manager(script):
    option = f"--ServerApp.kernel_manager_class={LabKernelManager.__module__}.LabKernelManager"
    assert option in (ROOT / script).read_text()
