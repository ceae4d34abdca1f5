"""Subcommands of the ``labtools`` command line, one module each."""
