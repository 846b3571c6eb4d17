"""resolver's headless core: state model, checkpoint store, practice world, runner, approvals,
executor and the ``resolver`` command line. It never imports Textual.

Beside the version: the distribution's name and the one wording of every install hint the
program prints (:func:`install_hint`), so that a sentence naming an extra never names a package
that is not this one."""

__version__ = "0.1.0"

DISTRIBUTION = "larkfield-resolver"
"""The distribution's name in ``pyproject.toml`` (what ``importlib.metadata`` and ``pip show`` know).
Not ``resolver``: that name on PyPI is an unrelated package, so ``pip install 'resolver[...]'``
would install it. The commands (``resolver``, ``resolver-tui``) and import packages keep their names."""

FEATURE_EXTRAS = ("openai", "postgres")
"""The extras a feature needs (``openai``: a live model; ``postgres``: a PostgreSQL store), in the
order a tool install names them (``pyproject.toml``'s ``[project.optional-dependencies]``)."""


def install_hint(extra: str | None = None) -> str:
    """How to install resolver with ``extra`` (None: the base install), as a clause for a sentence.

    The project is not published on a package index, so every form installs from the project
    folder (``.``): into its venv with ``pip install -e``, which only adds, so it names ``extra``
    alone; or as a tool with ``uv tool install`` or ``pipx install --force``, which replace the
    tool's environment with the extras named, so they name every feature extra (naming only
    ``extra`` would drop another feature already in use). A re-run also raises a dependency
    found below its declared floor.

    Example, ``install_hint("postgres")``::

        in the project folder, run pip install -e '.[postgres]' (its venv) or, for a tool install, uv tool install '.[openai,postgres]' (pipx: pipx install --force '.[openai,postgres]')

    Raises:
        ValueError: ``extra`` is not one of :data:`FEATURE_EXTRAS` (a mistake in the caller).
    """
    if extra is not None and extra not in FEATURE_EXTRAS:
        raise ValueError(f"{extra!r} is not a feature extra of {DISTRIBUTION}; the extras are {', '.join(FEATURE_EXTRAS)}.")
    local = "pip install -e ." if extra is None else f"pip install -e '.[{extra}]'"
    tool = f"'.[{','.join(FEATURE_EXTRAS)}]'"
    return (
        f"in the project folder, run {local} (its venv) or, for a tool install, uv tool install {tool} "
        f"(pipx: pipx install --force {tool})"
    )
