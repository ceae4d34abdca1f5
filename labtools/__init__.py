"""labtools: a teaching lab kit for network measurement on Mininet.

Importing the package is cheap: it loads no Mininet, pandas or matplotlib. Import the
submodules you need (``labtools.model.expect``, ``labtools.lab.probes``...); docs/developers.md,
"The layers and what each may import", shows the layers.
"""

__version__ = "0.1.0"
