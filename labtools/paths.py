"""Where the kit's own files are: the checkout it runs from (a base module, like errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

#: the folder that holds the ``labtools`` package
PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def checkout_root() -> Optional[Path]:
    """The kit's source folder when it runs from a checkout (editable install), else None."""
    return PACKAGE_PARENT if (PACKAGE_PARENT / "pyproject.toml").is_file() else None
