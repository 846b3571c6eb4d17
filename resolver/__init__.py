"""``resolver``: the package seed 000 ("Checkpoint and resume") uses, as printed.

``python -m resolver ...`` is the ``resolver`` command (:mod:`resolver.__main__`). The modules
below are the lesson's public Python API: names and call shapes over the headless ``core``,
holding no logic of their own, so a change to core keeps them working (the lesson test,
``tests/trainer/test_lesson_page.py``, runs the page against them).

- :mod:`resolver.systems`: ``World``, ``Faults``, ``PRACTICE_DB``
- :mod:`resolver.checkpoint`: ``CheckpointStore``, ``TaskState``
- :mod:`resolver.data`: ``load_task``
- :mod:`resolver.providers`: ``MockProvider``
- :mod:`resolver.runner`: ``new_state``, ``run_task``, ``outcome_line``

Everything works in a practice home only; in a shop home (``resolver init --shop``) each entry
point is refused with one sentence. This package may import ``core``, never the app.
"""
