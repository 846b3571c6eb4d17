"""resolver's headless core: state model, checkpoint store, practice world, runner, approvals,
executor and the ``resolver`` command line. It never imports Textual."""

__version__ = "0.1.0"
