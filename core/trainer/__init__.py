"""The lesson: the trainer's Friday-to-Monday class, its Python API and the demo."""
