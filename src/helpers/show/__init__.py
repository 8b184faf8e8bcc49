"""Pictures and tables: what the lessons draw and print, not what they teach.

``plots`` and ``widgets`` import matplotlib and ipywidgets inside each function, so that
``import helpers`` stays cheap.
"""
