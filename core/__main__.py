"""``python -m core`` does what the ``resolver`` command does."""

from core.cli import entry

if __name__ == "__main__":
    entry()
