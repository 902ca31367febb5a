"""The ``msprobe`` command: a typer root that tools extend through entry points."""
