"""The HTML report of a run and the texts of a run's examples.

:mod:`.build` assembles the report, :mod:`.html` renders it, :mod:`.texts` reads the
examples' texts (for the report and ``overlap explain RUN_DIR --id``).
"""
