"""helpers.show.source: a helper's source as a lesson shows it, without the docstring."""

from __future__ import annotations

import contextlib
import importlib

from helpers.show.source import show_source, source_of

determinism = importlib.import_module("helpers.determinism")


def documented(x: int) -> int:
    """A docstring
    over two lines."""
    return x + 1  # the body stays


@contextlib.contextmanager
def decorated():
    """Docstring."""
    yield 1


def undocumented():
    return "no docstring"


def test_the_docstring_goes_and_the_code_stays():
    assert source_of(documented) == "def documented(x: int) -> int:\n    return x + 1  # the body stays\n"
    assert source_of(undocumented) == 'def undocumented():\n    return "no docstring"\n'


def test_decorators_stay_and_wrappers_are_unwrapped():
    assert source_of(decorated) == "@contextlib.contextmanager\ndef decorated():\n    yield 1\n"
    shown = source_of(determinism.seed_everything)
    assert shown.startswith("def seed_everything(seed: int)") and '"""' not in shown
    assert "torch.manual_seed(seed)" in shown


def test_show_source_prints_what_source_of_returns(capsys):
    show_source(documented)
    assert capsys.readouterr().out == source_of(documented)


def test_a_class_keeps_its_methods_and_loses_only_its_own_docstring():
    class Documented:
        """Class docstring."""

        def method(self):
            """Method docstring."""
            return 1

    shown = source_of(Documented)
    assert "Class docstring" not in shown and "Method docstring" in shown and "return 1" in shown


def test_the_docstring_stays_when_asked():
    assert source_of(documented, docstring=True).count('"""') == 2
