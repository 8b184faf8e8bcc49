"""Loads the course's pytest plugin, ``tests/pytest_course.py``, for every pytest run in this
repository: ``make test``, ``pytest tests`` and the plain ``pytest --nbval notebooks/`` alike, so
that cells tagged ``gpu`` are skipped without CUDA whichever way the tests are started."""

pytest_plugins = ["tests.pytest_course"]
