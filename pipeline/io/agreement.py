"""Files of ``overlap agree``: reading a table of scores or judgments, writing the outputs.

A table is one Parquet file (or a folder of them), a CSV or a JSON Lines file (by the
name's extension, as :mod:`pipeline.io.read`). In CSV, whose cells are text, a list of
raters' numbers is a JSON array in one cell (``"[3, 4, 4]"``).

The outputs are ``agreement.parquet`` and ``agreement.json`` in an output folder, each
written atomically (a temporary name, then a rename), the JSON last. An existing pair is
replaced only with ``overwrite`` and only when its JSON says ``overlap agree`` wrote it.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from pipeline.errors import ExecutionError, InputError, OutputExistsError
from pipeline.io.files import Location, locate
from pipeline.io.read import input_format, read_text_file
from pipeline.io.write import check_output_place, write_bytes, write_parquet

PARQUET_NAME = "agreement.parquet"
JSON_NAME = "agreement.json"
TOOL = "overlap agree"
SIGNATURE_KEY = b"overlap.agree.signature"


def read_table(path: str, *, what: str) -> pa.Table:
    """Read a whole table of scores or judgments.

    Args:
        path: a Parquet file or folder, ``*.csv``, ``*.jsonl`` / ``*.ndjson`` / ``*.json``.
        what: its role for errors (``judgments``, ``scores``).

    Returns:
        The table (CSV columns as text).

    Raises:
        InputError: missing or unreadable (names the file).

    """
    loc = locate(path)
    try:
        info = loc.fs.get_file_info(loc.path)
    except OSError as err:
        raise InputError(f"{what}: cannot read {path}: {err}") from None
    if info.type == pafs.FileType.NotFound:
        raise InputError(f"{what}: {path} does not exist")
    if input_format(loc.path) != "parquet":
        return read_text_file(loc, what=what)
    import pyarrow.parquet as pq

    try:
        return pq.read_table(loc.path, filesystem=loc.fs)
    except (OSError, pa.ArrowException) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"{what}: {path} is not a readable Parquet file ({first})") from None


def _ours(loc: Location) -> bool:
    try:
        with loc.fs.open_input_stream(loc.child(JSON_NAME).path) as fh:
            doc = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("tool") == TOOL


def check_output(output: str, *, overwrite: bool) -> Location:
    """Check that the outputs may be written to the folder ``output`` (nothing is written).

    Args:
        output: the output folder (created when absent).
        overwrite: replace an existing pair written by ``overlap agree``.

    Returns:
        The folder's location.

    Raises:
        OutputExistsError: ``output`` is a file, a symbolic link, or is (or is inside) a
            complete overlap score run's directory (:func:`check_output_place`); an
            ``agreement.*`` file exists without ``overwrite``, or one that ``overlap agree``
            did not write.

    """
    loc = locate(output)
    check_output_place(output)
    try:
        info = loc.fs.get_file_info([loc.path, loc.child(JSON_NAME).path,
                                     loc.child(PARQUET_NAME).path])
    except OSError as err:
        raise ExecutionError(f"cannot read {output}: {err}") from None
    if info[0].type == pafs.FileType.File:
        raise OutputExistsError(f"{output} is a file, not a folder for the agreement outputs")
    present = [i for i in info[1:] if i.type != pafs.FileType.NotFound]
    if present:
        if not _ours(loc):
            raise OutputExistsError(f"{output} holds agreement files that overlap agree did "
                                    "not write; choose another --output")
        if not overwrite:
            raise OutputExistsError(f"{output} already holds {JSON_NAME}",
                                    hint="give --overwrite to replace it")
    return loc


def write_outputs(loc: Location, table: pa.Table, document: dict[str, Any], *,
                  signature: str) -> None:
    """Write ``agreement.parquet`` then ``agreement.json`` into the folder ``loc``.

    Raises:
        ExecutionError: the storage refused a write.

    """
    try:
        loc.fs.create_dir(loc.path, recursive=True)
    except OSError as err:
        raise ExecutionError(f"cannot create {loc.uri}: {err}") from None
    write_parquet(table, loc.child(PARQUET_NAME), metadata={SIGNATURE_KEY: signature.encode()})
    text = json.dumps(document, indent=2, allow_nan=False) + "\n"
    write_bytes(text.encode("utf-8"), loc.child(JSON_NAME))
