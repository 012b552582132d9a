"""Publishing runs into warehouse tables: Delta Lake (:mod:`.delta`), Iceberg (:mod:`.iceberg`).

``deltalake`` and ``pyiceberg`` are optional (``pip install 'overlap-pipeline[warehouse]'``)
and imported only when a table of their format is written.
"""
