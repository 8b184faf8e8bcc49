"""What the site's configuration (``conf.py``) needs by import path rather than by value."""

import re


def jupyterlab_anchor(text: str) -> str:
    """A heading's anchor as JupyterLab makes it ('Set-up check' -> 'Set-up-check').

    The notebooks link to sections the way JupyterLab names them, so the site names them alike.
    """
    return re.sub(r"\s+", "-", text.strip())
