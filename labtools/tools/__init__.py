"""The measurement tools, in three stages each: argument builders (:mod:`.args`), parsers
of their real output (:mod:`.parsers`) and typed summaries (:mod:`.summaries`); plus the
kit's own tool, :mod:`.simpleperf`. Imports only :mod:`labtools.errors` and this package.
"""
