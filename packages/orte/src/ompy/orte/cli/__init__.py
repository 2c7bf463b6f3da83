"""The ``ompy`` command: a click group whose subcommands are plug-ins (``ompy.cli``)."""
