"""Sphinx configuration of the course's site, used by ``tools/build_docs.py`` (``make docs``).

The source folder is a staged copy of ``notebooks/`` with a generated ``index.md``; see the
builder's docstring for why and for what each setting below protects.
"""

import os
from pathlib import Path

from tools.course import repository

project = "Same code, different numbers"
language = "en"

extensions = ["myst_nb", "tools.site.course_site"]  # the second adds Kaggle to the launch menu
root_doc = "index"
exclude_patterns = ["**.ipynb_checkpoints"]

# The pages show the outputs stored in the notebooks (the committed CPU run); nothing is executed.
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_update_mathjax = False  # its settings are for MathJax 3 and 4; the site loads MathJax 2 (below)
myst_heading_anchors = 3
myst_heading_slug_func = "tools.site.course_site.jupyterlab_anchor"  # the anchors JupyterLab gives headings

# Offline: MathJax, RequireJS and the widget manager come from _static (copied from their npm
# packages by the builder), never from a CDN. MathJax 2, because the widget manager typesets widget
# labels through MathJax 2's API (MathJax.Hub.Queue); the delimiters are Sphinx's.
html_static_path = [os.environ["COURSE_SITE_VENDOR"], str(Path(__file__).parent / "static")]
html_css_files = ["course.css"]
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
mathjax2_config = {
    "tex2jax": {
        "inlineMath": [["\\(", "\\)"]],
        "displayMath": [["\\[", "\\]"]],
        "processRefs": False,
        "processEnvironments": False,
    }
}
# widgets-paths.js tells RequireJS where the widget manager lies, so that it finds its own fonts
# there (it looks next to its modules' URLs, which RequireJS would otherwise resolve against the
# page's own folder).
nb_ipywidgets_js = {
    "requirejs/require.js": {},
    "widgets-paths.js": {},
    "widgets/dist/embed-amd.js": {},
}

html_theme = "sphinx_book_theme"
html_title = "Same code, different numbers"
html_copy_source = True  # for the download button (the builder puts the original notebooks there)
html_last_updated_fmt = None
# The repository the header's buttons link to and the launch menu opens the notebooks from: the
# [tool.course] setting in pyproject.toml, or COURSE_SITE_REPOSITORY (the site workflow sets it, so a
# fork's site links to the fork). Each page is a notebook under notebooks/ there (path_to_docs).
address, branch = repository()
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "repository_url": os.environ.get("COURSE_SITE_REPOSITORY") or address,
    "repository_branch": branch,
    "path_to_docs": "notebooks",
    "use_repository_button": True,
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "navbar_persistent": [],  # one search box (the sidebar's), not a second one in a top bar
    "navigation_with_keys": False,
    "footer_content_items": [],  # no author or copyright line
}
html_favicon = str(Path(__file__).parent / "static" / "favicon.svg")
html_context = {"default_mode": "auto"}  # light or dark, as the reader's system is set
