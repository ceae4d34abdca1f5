"""simpleperf: the kit's own iperf-like TCP throughput tool (server and client).

Run it as ``simpleperf`` or ``python -m labtools.tools.simpleperf``::

    simpleperf -s [-b ADDR] [-p PORT] [-f B|KB|MB] [--json]
    simpleperf -c [-I SERVER] [-p PORT] [-t SECONDS | -n AMOUNT] [-i SECONDS]
               [-P 1..5] [-f B|KB|MB] [--json]

The client sends on ``-P`` parallel TCP connections for ``-t`` seconds (default 25) or
``-n`` bytes per connection (``10MB``; decimal units, 1 KB = 1000 B); the server counts
what arrives and tells the client, whose report puts both side by side. The server's
count is the truth. A transfer is complete only when the client's data ended with its END
record (wire protocol: :mod:`labtools.tools.simpleperf.protocol`); a client stopped or
killed, a server stopped or killed, or a broken connection is reported ``interrupted`` on
both sides, in the tables and in JSON. ``--json`` prints one JSON object per line, parsed by
:mod:`labtools.tools.parsers.simpleperf` (``labtools parse simpleperf FILE``).

The kit's probes build its argument lists in :mod:`labtools.tools.args` (one place for
every tool). Importing this package is cheap (no sockets are opened, nothing heavy is imported).
"""

from __future__ import annotations
