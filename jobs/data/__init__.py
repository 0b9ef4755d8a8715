"""Dataset preparation shared by the CLI (`rl-jobs data ...`) and on-cluster payloads.

Modules here import only the standard library at import time: the package is shipped to the
cluster (Ray `py_modules`) and run there with the image's Python.
"""
