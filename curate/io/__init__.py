"""Input: where bytes come from and how each format becomes record batches, one module per
concern (:mod:`~curate.io.records` the batch types, :mod:`~curate.io.sources` files, streams and
compression, :mod:`~curate.io.encodings`, :mod:`~curate.io.hub`, :mod:`~curate.io.folders`,
:mod:`~curate.io.json_files`, :mod:`~curate.io.csv_files`, :mod:`~curate.io.parquet_files`,
:mod:`~curate.io.spans` for shards, and :mod:`~curate.io.read`, which resolves an input and
hands it to its reader); the scans that turn big binary inputs into compact tables in worker
processes (:mod:`~curate.io.xland_scan` for HDF5 learning histories, :mod:`~curate.io.media_scan`
and :mod:`~curate.io.media` for media files); :mod:`~curate.io.sniff`, which tells what family
an input looks like.

May import: ``curate.core``. This file imports nothing, so a scan worker that imports
``curate.io.xland_scan`` loads numpy and h5py, not the readers.
"""
