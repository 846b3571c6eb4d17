"""resolver_tui: the Textual approvals app on top of :mod:`core`."""
