"""Code that serves one lesson each; every module names its lesson in its first lines.

checklist (05), checkpoints (07), bench (08), inference (09), distributed (11), capstone and
capstone_server (12).
"""
