"""nbgrader's side of the forked kernels (:mod:`labtools.instructor.kernel_forks`).

:class:`ForkingExecute` is nbgrader's ``Execute`` with
:class:`~labtools.instructor.kernel_fork_manager.ForkingKernelManager`, put in nbgrader's
autograde steps by a course the kit made (:func:`autograde_preprocessors`,
:func:`labtools.teach.notebook_files.course_config`). The manager starts the fork server
once per nbgrader process; the server ends with nbgrader and is waited for, so its kernels'
CPU time is nbgrader's, as a plain kernel's is.
"""

from __future__ import annotations

from typing import Any, List

from nbgrader.preprocessors import Execute

from labtools.instructor.kernel_fork_manager import ForkingKernelManager


class ForkingExecute(Execute):
    """nbgrader's ``Execute`` (its configuration too), its kernels from the fork server."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("kernel_manager_class", ForkingKernelManager)
        super().__init__(*args, **kwargs)


def autograde_preprocessors() -> List[Any]:
    """nbgrader's autograde steps, ``Execute`` replaced by :class:`ForkingExecute`."""
    from nbgrader.converters.autograde import Autograde

    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    return [ForkingExecute if step is Execute else step for step in steps]
