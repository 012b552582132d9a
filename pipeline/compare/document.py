"""The comparison document (``compare.json``): its one schema, checked whenever it is read.

:meth:`pipeline.compare.comparison.RunComparison.to_document` writes the document;
:func:`load_document` reads one back (``overlap report --comparison``) and
:func:`check_document` checks a parsed one against :data:`SCHEMA`, the one description of
its fields: their types, ranges and choices, and the rules that tie them together (the
verdict agrees with the alarms, every alarm names a row, every measure has its overall
row). A document that breaks one is refused with an :class:`~pipeline.errors.InputError`
(exit 2) naming the field (``settings.confidence``, ``rows[3].p_value``,
``alarms[0].kind``), never a traceback nor a report that leaves its verdict out.

Fields that no reader uses are allowed and not checked, so a document written by a newer
version still reads; a field that is present is checked even when it is optional.
:func:`check_describes` tells whether a document describes two runs: its rows' values
against the same comparison made again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from pipeline.errors import InputError

_ABSENT = object()


class _Bad(Exception):
    """A field that breaks the schema: where, what it must be, and what it is."""

    def __init__(self, path: str, expected: str, value: Any = _ABSENT) -> None:
        super().__init__(path, expected)
        self.path, self.expected, self.value = path, expected, value


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return ""
    text = "null" if value is None else json.dumps(value) if isinstance(
        value, (str, bool)) else type(value).__name__ if isinstance(value, (list, dict)) \
        else repr(value)
    return ", got " + (text if len(text) <= 40 else text[:37] + "...")


def _at(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class _Spec:
    """One field's type; :meth:`check_all` checks many values of it (a column of rows)."""

    expected = "a value"

    def check(self, value: Any, path: str) -> None:
        """Raise :class:`_Bad` when ``value`` breaks the spec."""
        raise NotImplementedError

    def check_all(self, values: Sequence[Any], path_of: Callable[[int], str]) -> None:
        """Check each value (``path_of(i)`` names the i-th)."""
        for i, value in enumerate(values):
            self.check(value, path_of(i))


@dataclass
class _Scalar(_Spec):
    """A JSON scalar of given Python types, optionally within a range or among choices."""

    types: tuple[type, ...]
    expected: str
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple[Any, ...] | None = None
    nullable: bool = False
    nonempty: bool = False

    def ok(self, value: Any) -> bool:
        """Whether ``value`` fits (an exact type: a bool is not a number here)."""
        if value is None:
            return self.nullable
        if type(value) not in self.types:
            return False
        if self.choices is not None and value not in self.choices:
            return False
        if self.nonempty and not value:
            return False
        if self.low is not None or self.high is not None:
            if isinstance(value, float) and not math.isfinite(value):
                return False
            if self.low is not None and (value <= self.low if self.open_low
                                         else value < self.low):
                return False
            if self.high is not None and (value >= self.high if self.open_high
                                          else value > self.high):
                return False
        return True

    def check(self, value: Any, path: str) -> None:
        if not self.ok(value):
            raise _Bad(path, self.expected + (" or null" if self.nullable else ""), value)

    def check_all(self, values: Sequence[Any], path_of: Callable[[int], str]) -> None:
        kinds = set(map(type, values))
        allowed = set(self.types) | ({type(None)} if self.nullable else set())
        ranged = self.low is not None or self.high is not None
        if kinds <= allowed and not ranged and (self.choices is None or set(values) <= set(
                self.choices) | {None}) and (not self.nonempty or all(
                v for v in values if v is not None)):
            return  # the common case, without a call per value
        if ranged and kinds <= allowed:
            numbers = [v for v in values if v is not None]
            if all(map(math.isfinite, numbers)) and (not numbers or (
                    self.ok(min(numbers)) and self.ok(max(numbers)))):
                return
        super().check_all(values, path_of)


def _number(expected: str = "a number", **kw: Any) -> _Scalar:
    return _Scalar((int, float), expected, **kw)


def _integer(expected: str = "an integer", **kw: Any) -> _Scalar:
    return _Scalar((int,), expected, **kw)


def _text(expected: str = "a string", **kw: Any) -> _Scalar:
    return _Scalar((str,), expected, **kw)


def _choice(choices: Sequence[str], **kw: Any) -> _Scalar:
    return _Scalar((str,), "one of " + ", ".join(map(str, choices)), choices=tuple(choices),
                   **kw)


_BOOL = _Scalar((bool,), "true or false")
# a group or id value as the document writes it (strings, numbers, booleans, null)
_VALUE = _Scalar((str, int, float, bool), "a string, number or boolean", nullable=True)
_PROBABILITY = _number("a probability in [0, 1]", low=0.0, high=1.0, nullable=True)
_COUNT = _integer("an integer >= 0", low=0)
_NUMBER_OR_NULL = _Scalar((int, float), "a number", nullable=True)


@dataclass
class _List(_Spec):
    item: _Spec
    expected: str = "a list"
    nonempty: bool = False

    def check(self, value: Any, path: str) -> None:
        if type(value) is not list:
            raise _Bad(path, self.expected, value)
        if self.nonempty and not value:
            raise _Bad(path, "a non-empty list", value)
        self.item.check_all(value, lambda i: f"{path}[{i}]")


@dataclass
class _Map(_Spec):
    """An object whose keys are free (names) and whose values share one spec."""

    value: _Spec
    expected: str = "an object"

    def check(self, value: Any, path: str) -> None:
        if type(value) is not dict:
            raise _Bad(path, self.expected, value)
        for key, item in value.items():
            self.value.check(item, _at(path, key))


@dataclass
class _Object(_Spec):
    """An object with named fields (``required`` or not); other keys are let through."""

    fields: Mapping[str, _Spec]
    required: tuple[str, ...] = ()
    nullable: bool = False
    expected: str = "an object"
    rule: Callable[[dict[str, Any], str], None] | None = None
    free: _Spec | None = None  # the spec of keys not named in ``fields`` (None: unchecked)

    def check(self, value: Any, path: str) -> None:
        if value is None and self.nullable:
            return
        if type(value) is not dict:
            raise _Bad(path, self.expected + (" or null" if self.nullable else ""), value)
        for key in self.required:
            if key not in value:
                raise _Bad(_at(path, key), "present (it is missing)")
        for key, spec in self.fields.items():
            if key in value:
                spec.check(value[key], _at(path, key))
        if self.free is not None:
            for key, item in value.items():
                if key not in self.fields:
                    self.free.check(item, _at(path, key))
        if self.rule is not None:
            self.rule(value, path)

    def check_all(self, values: Sequence[Any], path_of: Callable[[int], str]) -> None:
        # column by column: one pass per field over every row, not a call per cell
        if not set(map(type, values)) <= {dict}:
            for i, value in enumerate(values):
                if not (type(value) is dict or (value is None and self.nullable)):
                    raise _Bad(path_of(i), self.expected, value)
        where = [i for i, v in enumerate(values) if v is not None]
        present = [values[i] for i in where]
        needed = set(self.required)
        extra: set[str] = set()
        if self.free is not None and present:
            extra = set().union(*map(dict.keys, present)) - set(self.fields)
        for key in [*self.fields, *sorted(extra)]:
            spec = self.fields.get(key, self.free)
            assert spec is not None
            at = where
            try:
                column = list(map(itemgetter(key), present)) if key in needed else None
            except KeyError:
                i = next(i for i, v in zip(where, present, strict=True) if key not in v)
                raise _Bad(_at(path_of(i), key), "present (it is missing)") from None
            if column is None:
                column = [v.get(key, _ABSENT) for v in present]
                if any(v is _ABSENT for v in column):
                    at = [i for i, v in zip(where, column, strict=True) if v is not _ABSENT]
                    column = [v for v in column if v is not _ABSENT]
            spec.check_all(column, _naming(path_of, at, key))
        if self.rule is not None:
            for i, value in zip(where, present, strict=True):
                self.rule(value, path_of(i))


def _naming(path_of: Callable[[int], str], rows: Sequence[int], key: str
            ) -> Callable[[int], str]:
    """The path of the j-th value of a column: ``key`` of the ``rows[j]``-th object."""
    return lambda j: _at(path_of(rows[j]), key)


def _alarm_rule(alarm: dict[str, Any], path: str) -> None:
    if alarm["kind"] != "missing":
        for key in ("metric", "measure"):
            if not isinstance(alarm.get(key), str):
                raise _Bad(_at(path, key), f"a string for a {alarm['kind']} alarm",
                           alarm.get(key, _ABSENT))


def _run(**extra: _Spec) -> _Object:
    return _Object({"path": _text(nonempty=True), "run_id": _text(), "signature": _text(),
                    "n_examples": _COUNT, **extra},
                   required=("path", "run_id", "signature"))


_ROW_FIELDS: dict[str, _Spec] = {
    "group": _text(), "metric": _text(nonempty=True), "measure": _text(nonempty=True),
    "statistic": _choice(("mean", "corpus")),
    "n_paired": _COUNT, "n_baseline_only": _COUNT, "n_candidate_only": _COUNT,
    "baseline_mean": _NUMBER_OR_NULL, "candidate_mean": _NUMBER_OR_NULL,
    "delta": _NUMBER_OR_NULL, "ci_low": _NUMBER_OR_NULL, "ci_high": _NUMBER_OR_NULL,
    "p_value": _PROBABILITY, "p_adjusted": _PROBABILITY, "p_tail": _PROBABILITY,
    "mde": _number("a number >= 0", low=0.0, nullable=True),
    "band": _number("a number >= 0", low=0.0, nullable=True),
    "band_source": _choice(("static", "learned", "floor")),
    "history_nights": _COUNT,
    "alarm": _BOOL, "missing": _BOOL, "drift": _BOOL,
    "drift_statistic": _NUMBER_OR_NULL, "drift_p": _PROBABILITY,
}
_ROW_REQUIRED = tuple(k for k in _ROW_FIELDS if k != "p_tail")  # p_tail: since issue 25

SCHEMA = _Object(
    {
        "alarm": _BOOL,
        "alarms": _List(_Object(
            {"group": _text(), "metric": _text(nullable=True), "measure": _text(nullable=True),
             "kind": _choice(("missing", "change", "drift"))},
            required=("group", "kind"), rule=_alarm_rule)),
        "bands": _List(_text()),
        "missing": _BOOL,
        "baseline": _run(),
        "candidate": _run(),
        "signature_differences": _List(_text()),
        "settings": _Object({
            "measures": _List(_text(nonempty=True), nonempty=True),
            "band": _number("a number >= 0", low=0.0),
            "band_floors": _Map(_number("a number >= 0", low=0.0)),
            "confidence": _number("a number in (0, 1)", low=0.0, high=1.0, open_low=True,
                                  open_high=True),
            "n_bootstrap": _integer("an integer >= 1", low=1),
            "n_trials": _integer("an integer >= 1", low=1),
            "seed": _integer("an integer in [0, 2**64)", low=0, high=2**64 - 1),
            "adjust": _choice(("holm", "bh", "none")),
            "max_missing": _number("a fraction in [0, 1]", low=0.0, high=1.0),
            "top": _COUNT,
        }, free=_Scalar((str, int, float, bool), "text or a number", nullable=True),
            required=("measures", "confidence", "n_bootstrap", "seed", "adjust",
                      "max_missing")),
        "pairing": _Object({
            "id_column": _text(nonempty=True), "group_columns": _List(_text(nonempty=True)),
            "n_paired": _COUNT, "n_baseline_only": _COUNT, "n_candidate_only": _COUNT,
            "baseline_only_ids": _List(_Scalar((str, int, float, bool, dict),
                                               "an id or a key object")),
            "candidate_only_ids": _List(_Scalar((str, int, float, bool, dict),
                                                "an id or a key object")),
        }, required=("id_column", "group_columns", "n_paired", "n_baseline_only",
                     "n_candidate_only")),
        "history": _Object({
            "source": _text(nonempty=True),
            "window": _integer("an integer >= 1", low=1),
            "nights": _List(_Object({"run_date": _text(), "run_id": _text(),
                                     "path": _text()}, free=_VALUE)),
            "reference_run": _text(nullable=True),
        }, required=("source", "window", "nights"), nullable=True),
        "rows": _List(_Object(_ROW_FIELDS, required=_ROW_REQUIRED, free=_VALUE),
                      nonempty=True),
        "top": _List(_Object({}, free=_VALUE)),
        "notes": _List(_text()),
        "version": _text(),
    },
    required=("alarm", "alarms", "baseline", "candidate", "settings", "pairing", "rows",
              "top"),
)
"""The schema of ``compare.json`` (what :meth:`RunComparison.to_document` writes)."""


def _rules(doc: dict[str, Any]) -> None:
    """What ties the fields together, after each field is checked alone."""
    rows = doc["rows"]
    keys = {(r["group"], r["metric"], r["measure"]) for r in rows}
    groups = {r["group"] for r in rows}
    overall = {f"{r['metric']}.{r['measure']}" for r in rows if r["group"] == "all"}
    lacking = [m for m in doc["settings"]["measures"] if m not in overall]
    if lacking:
        raise _Bad("rows", f"an overall row (group 'all') for every measure (none for "
                           f"{', '.join(lacking)})")
    for i, a in enumerate(doc["alarms"]):
        if a["kind"] == "missing":
            if a["group"] not in groups:
                raise _Bad(f"alarms[{i}]", f"an alarm of a row (no row has group "
                                           f"{a['group']!r})")
        elif (a["group"], a["metric"], a["measure"]) not in keys:
            raise _Bad(f"alarms[{i}]", f"an alarm of a row (no row is {a['group']} "
                                       f"{a['metric']}.{a['measure']})")
    flagged = {("missing", r["group"], None, None) for r in rows if r["missing"]}
    flagged |= {("change" if r["alarm"] else "drift", r["group"], r["metric"], r["measure"])
                for r in rows if r["alarm"] or r["drift"]}
    listed = set()
    for i, a in enumerate(doc["alarms"]):
        key = (a["kind"], a["group"], *((None, None) if a["kind"] == "missing"
                                        else (a["metric"], a["measure"])))
        if key not in flagged:
            raise _Bad(f"alarms[{i}]", f"an alarm its row is flagged with (the row of "
                                       f"{a['group']} has no {a['kind']} flag)")
        listed.add(key)
    for i, r in enumerate(rows):
        for kind, flag in (("missing", r["missing"]), ("change", r["alarm"]),
                           ("drift", r["drift"] and not r["alarm"])):
            key = (kind, r["group"], *((None, None) if kind == "missing"
                                       else (r["metric"], r["measure"])))
            if flag and key not in listed:
                raise _Bad("alarms", f"a list of every flagged row (rows[{i}], "
                                     f"{r['group']} {r['metric']}.{r['measure']}, is flagged "
                                     f"{kind} and not listed)")
    if doc["alarm"] != bool(doc["alarms"]):
        raise _Bad("alarm", f"{str(bool(doc['alarms'])).lower()}, as the alarms list says "
                            f"({len(doc['alarms'])} alarms)", doc["alarm"])


def check_document(document: Any, *, source: str) -> dict[str, Any]:
    """Check a parsed comparison document against :data:`SCHEMA` and its rules.

    Args:
        document: what ``json.loads`` made of a ``compare.json``.
        source: the file's name, for the message.

    Returns:
        ``document`` itself, unchanged.

    Raises:
        InputError: the first field that breaks the schema, named by its path
            (``source: field settings.confidence must be a number in (0, 1), got "x"``).

    """
    try:
        SCHEMA.check(document, "")
        _rules(document)
    except _Bad as bad:
        if not bad.path:
            raise InputError(f"{source} is not a comparison document (compare.json): it is "
                             f"{_shown(bad.value)[6:] or 'not an object'}") from None
        raise InputError(f"{source}: field {bad.path} must be {bad.expected}"
                         f"{_shown(bad.value)}",
                         hint="write it again with overlap compare --output") from None
    return document


def load_document(data: bytes, *, source: str) -> dict[str, Any]:
    """Parse and check a ``compare.json`` (see :func:`check_document`).

    Args:
        data: the file's bytes (UTF-8 JSON).
        source: the file's name, for the messages.

    Returns:
        The document, a dict.

    Raises:
        InputError: not UTF-8, not JSON (or nested past the parser's depth), or a field that
            breaks the schema.

    """
    try:
        document = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise InputError(f"{source} is nested too deeply to be a comparison document") \
            from None
    except (UnicodeDecodeError, ValueError) as err:
        raise InputError(f"{source} is not valid JSON: {err}") from None
    return check_document(document, source=source)


# what a document's row must share with the comparison made again, for the document to
# describe the same runs
DESCRIBED_FIELDS = ("n_paired", "n_baseline_only", "n_candidate_only", "baseline_mean",
              "candidate_mean")


@dataclass
class Described:
    """The facts of a comparison made again, to hold a document against (:func:`check_describes`).

    Attributes:
        baseline_path: the baseline run's directory as given.
        baseline_run_id: its run id.
        candidate_run_id: the candidate's run id.
        rows: ``{(group, metric, measure): {field: value}}`` for the fields of
            :data:`DESCRIBED_FIELDS` (NaN as None).

    """

    baseline_path: str
    baseline_run_id: str | None
    candidate_run_id: str | None
    rows: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)


def check_describes(document: Mapping[str, Any], made: Described, *, source: str) -> None:
    """Refuse a document that does not describe the runs it is shown with.

    The run ids must be the document's, and each row's counts and both runs' values must be
    those of the comparison made again from the runs (bit for bit: the values do not depend
    on the engine, the bands or the history).

    Args:
        document: a checked document (:func:`check_document`).
        made: the same comparison made again from the runs.
        source: the document's name, for the message.

    Raises:
        InputError: another baseline run, another candidate, or rows whose values differ.

    """
    saved = document["baseline"]
    if saved["run_id"] != made.baseline_run_id:
        raise InputError(
            f"{source} compares with baseline run {saved['run_id']!r} ({saved['path']}), not "
            f"with {made.baseline_path} (run {made.baseline_run_id!r})",
            hint="give the comparison's own baseline, or leave --baseline out")
    if document["candidate"]["run_id"] != made.candidate_run_id:
        raise InputError(f"{source} compares run {document['candidate']['run_id']!r}, not this "
                         f"run ({made.candidate_run_id!r})")
    for row in document["rows"]:
        key = (row["group"], row["metric"], row["measure"])
        again = made.rows.get(key)
        name = f"{key[0]} {key[1]}.{key[2]}"
        if again is None:
            raise InputError(f"{source} does not describe these runs: they have no row "
                             f"{name}")
        for name_of in DESCRIBED_FIELDS:
            a, b = row[name_of], again[name_of]
            if a != b and not (a is None and b is None):
                raise InputError(
                    f"{source} does not describe these runs: {name} {name_of} is {a} in it "
                    f"and {b} from the runs (baseline {made.baseline_path})",
                    hint="a run scored again since, or an edited comparison: compare again")


__all__ = ["DESCRIBED_FIELDS", "SCHEMA", "Described", "check_describes", "check_document",
           "load_document"]
