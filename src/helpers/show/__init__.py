"""Pictures and tables: what the lessons draw and print, not what they teach.

``tables``, ``plots``, ``diagrams``, ``widgets`` and ``source`` serve every lesson; ``overview``
(00), ``rounding`` (01), ``reductions`` (02), ``precision`` (03), ``atomics`` (04), ``rng`` (05),
``transfers`` (06), ``checkpoints`` (07), ``performance`` (08), ``inference`` (09), ``validation``
(10), ``allreduce`` (11), ``capstone`` (12) and ``myths`` (13) draw one lesson's figures. matplotlib
and ipywidgets are imported inside each function, so that ``import helpers`` stays cheap.
"""
