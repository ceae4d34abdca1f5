"""The instructor's subcommands of the ``labtools`` command line, one module each (named by
:data:`labtools.cli.COMMANDS`; the student edition has none of them)."""
