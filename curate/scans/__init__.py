"""Scans: the one pass over a family's raw data, as pure functions of (input, slice).

Why a package of its own, outside :mod:`curate.families`: a scan runs in worker processes (and,
unchanged, as tasks on a cluster), and a worker should start with only what the scan needs
(numpy, h5py). Importing anything under ``curate.families`` loads the family registry and the
data contract (polars, pyarrow, pydantic): about a second and 100 MB per worker. Modules here
import nothing of curate but :mod:`curate.schemas` layout constants that need no pydantic.
"""
