"""labtools: a teaching lab kit for network measurement on Mininet.

Importing the package is cheap: it loads no Mininet, pandas or matplotlib. Import the
submodules you need (``labtools.model.topology``, ``labtools.model.expect``, ``labtools.tools.parsers``...).
"""

__version__ = "0.1.0"
