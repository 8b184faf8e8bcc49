"""What the site's configuration (``conf.py``) needs by import path rather than by value, and the
Sphinx extension it loads: a Kaggle entry in the theme's launch menu."""

from tools.course import kaggle_url


def jupyterlab_anchor(text: str) -> str:
    """A heading's anchor as JupyterLab makes it ('Set-up check' -> 'Set-up-check').

    JupyterLab replaces each space of the heading's text with a hyphen and keeps the rest; the
    notebooks link to sections by those anchors, so the site names them alike.
    """
    return text.replace(" ", "-")


def add_kaggle_button(app, pagename, templatename, context, doctree) -> None:
    """Add "Kaggle" to the launch menu the Book Theme builds for a notebook's page.

    The theme's launch menu offers Colab but not Kaggle. Its menu is the header button labelled
    "launch-buttons", built from the same options read here (the repository, its branch, and the
    notebooks' folder in it); a page without one (the home page) gets none. The icon is Font
    Awesome's, which the theme ships: the page loads nothing from elsewhere.
    """
    menu = next((b for b in context.get("header_buttons", []) if b.get("label") == "launch-buttons"), None)
    if menu is None:
        return
    options = app.config.html_theme_options
    path = f"{options['path_to_docs'].strip('/')}/{pagename}.ipynb"
    menu["buttons"].append(
        {
            "type": "link",
            "text": "Kaggle",
            "tooltip": "Launch on Kaggle",
            "icon": "fab fa-kaggle",
            "url": kaggle_url(options["repository_url"].rstrip("/"), options["repository_branch"], path),
        }
    )


def setup(app):
    # after the theme's own launch menu (priority 501)
    app.connect("html-page-context", add_kaggle_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
