"""nbgrader's server extensions, loaded once the lab answers.

A student's server has two of nbgrader's server extensions: the assignment list (fetch and
submit on a course) and validation (the *Validate* button); the instructor's ``make lab``
has the formgrader and the course list too. Jupyter imports a server extension before it
serves anything, and importing nbgrader (its database layer, setuptools, nbconvert) is the
largest part of a lab's start: 1.2 s on this machine, 22.6 s of ``make lab``'s 86 s (the
instructor's) in the lab VM under software emulation. Listed in ``jpserver_extensions``
instead of them (deploy/image/etc/labtools/jupyter/student, deploy/lab/instructor), this
module loads them as soon as the server runs: nbgrader is imported in a thread while the
lab answers, then each extension adds its handlers as it would have at the start. Until
then (a few seconds; half a minute under emulation) their addresses answer 404; nothing
else changes.

Which ones: the config's ``DeferredExtensions.modules`` (a list of module names, in the
order to load them), or :data:`DEFERRED` (a student's two) where it says nothing.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any, Dict, List, Tuple

#: the server extensions this module loads once the server runs, in this order, where the
#: config's ``DeferredExtensions.modules`` names none (a student's server)
DEFERRED = ("nbgrader.server_extensions.assignment_list",
            "nbgrader.server_extensions.validate_assignment")
#: the config's section naming the modules to load
CONFIG_SECTION = "DeferredExtensions"


def deferred_modules(config: Any) -> Tuple[str, ...]:
    """The server extensions to load once the server runs: ``config``'s
    ``DeferredExtensions.modules`` (Jupyter's config, a dict of sections), or
    :data:`DEFERRED`; a value that is not a list of names is ignored for :data:`DEFERRED`."""
    section = config.get(CONFIG_SECTION) if isinstance(config, dict) else None
    modules = section.get("modules") if isinstance(section, dict) else None
    if isinstance(modules, (list, tuple)) and modules \
            and all(isinstance(name, str) and name for name in modules):
        return tuple(modules)
    return DEFERRED


def _jupyter_server_extension_points() -> List[Dict[str, str]]:
    """Jupyter's entry: this module is the extension."""
    return [{"module": "labtools.teach.deferred_extensions"}]


async def load_deferred(serverapp: Any) -> None:
    """Import each of :func:`deferred_modules` in a thread, then load it into ``serverapp``
    (its handlers added as at the start); one that fails is logged, the lab goes on."""
    loop = asyncio.get_running_loop()
    for name in deferred_modules(serverapp.config):
        if serverapp.jpserver_extensions.get(name):  # also listed itself: loaded already
            continue
        try:
            module = await loop.run_in_executor(None, importlib.import_module, name)
            module._load_jupyter_server_extension(serverapp)
        except Exception as exc:  # noqa: BLE001 - an extension's fault must not stop the lab
            serverapp.log.error("labtools: the server extension %s did not load: %s: %s",
                                name, type(exc).__name__, exc)
        else:
            serverapp.log.info("labtools: %s loaded once the server ran", name)


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Schedule :func:`load_deferred` for when the server's event loop runs."""
    from tornado.ioloop import IOLoop

    IOLoop.current().add_callback(load_deferred, serverapp)
