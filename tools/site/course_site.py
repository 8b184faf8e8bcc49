"""What the site's configuration (``conf.py``) needs by import path rather than by value."""


def jupyterlab_anchor(text: str) -> str:
    """A heading's anchor as JupyterLab makes it ('Set-up check' -> 'Set-up-check').

    JupyterLab replaces each space of the heading's text with a hyphen and keeps the rest; the
    notebooks link to sections by those anchors, so the site names them alike.
    """
    return text.replace(" ", "-")
