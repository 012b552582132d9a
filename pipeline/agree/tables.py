"""Joining scores with judgments, and the result as a table, a document and a summary.

Pure: pandas DataFrames in (as the files held them), the joined frame, the rows as an
Arrow table, the ``agreement.json`` document and the terminal text out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.errors import InputError
from pipeline.printable import safe

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from pipeline.agree.analysis import AgreementResult, AgreeSettings

INPUT_COLUMNS = ("input", "document")  # the default input column: the first present
MAIN_SUFFIXES = (".fmeasure", ".score")  # a run's measures by default


@dataclass
class Joined:
    """Scores and judgments joined by id.

    Attributes:
        frame: one row per judged example: id, system, input, measures, humans, groups.
        id_column: the id column.
        system_column: the system column.
        input_column: the input column (None: one row per system).
        measures: the score columns, as asked.
        humans: the judgment columns.
        notes: what the join dropped or assumed, one sentence each.

    """

    frame: pd.DataFrame
    id_column: str
    system_column: str
    input_column: str | None
    measures: list[str]
    humans: list[str]
    notes: list[str] = field(default_factory=list)
    scores: pd.DataFrame | None = None


def _ids(values: Sequence[Any], limit: int = 5) -> str:
    shown = ", ".join(repr(v) for v in list(values)[:limit])
    more = len(values) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def _duplicates(frame: pd.DataFrame, id_column: str, what: str, name: str) -> None:
    dup = frame[id_column][frame[id_column].duplicated()]
    if len(dup):
        raise InputError(f"{what} {name}: duplicated {id_column} {_ids(dup.unique().tolist())}")


def _is_list_column(column: pd.Series) -> bool:
    first = next((v for v in column if v is not None and not (isinstance(v, float)
                                                               and math.isnan(v))), None)
    return isinstance(first, (list, tuple, np.ndarray))


def _parse_json_lists(frame: pd.DataFrame, name: str) -> None:
    """CSV cells holding JSON arrays (``"[3, 4, 4]"``) as lists."""
    import pandas as pd

    column = frame[name]
    # object, or pandas' string dtype (the default for text from pandas 3)
    if not len(column) or not (column.dtype == object
                               or pd.api.types.is_string_dtype(column.dtype)):
        return
    text = column.dropna()
    if len(text) and all(isinstance(v, str) and v.strip().startswith("[") for v in text):
        try:
            frame[name] = [None if not isinstance(v, str) else json.loads(v) for v in column]
        except ValueError:
            raise InputError(f"judgments: column {name!r} holds text that is not a JSON "
                             "list of numbers") from None


def _numeric_like(column: pd.Series) -> bool:
    import pandas as pd

    if _is_list_column(column):
        return True
    if pd.api.types.is_bool_dtype(column):
        return False
    if pd.api.types.is_numeric_dtype(column):
        return True
    converted = pd.to_numeric(column, errors="coerce")
    return bool(column.notna().any()) and bool(converted.notna().sum() == column.notna().sum())


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _is_number(value: Any) -> bool:
    """A real number (not a bool, not text); numpy scalars and ``Decimal`` included."""
    import numbers

    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) \
        or type(value).__name__ == "Decimal"


def _check_judgment_column(frame: pd.DataFrame, name: str, *, file: str, as_text: bool,
                           id_column: str, chosen: bool) -> int:
    """Refuse a judgment column that does not hold numbers; count its missing judgments.

    Args:
        frame: the judgments (lists already parsed from CSV cells).
        name: the judgment column.
        file: the judgments' path, for errors and notes.
        as_text: the file keeps every cell as text (CSV): numbers are parsed from it; else
            (Parquet, JSON Lines) a number must be stored as a number.
        id_column: the id column, for the ids named in errors.
        chosen: the column was picked as numeric-like by default (not named by --human).

    Returns:
        Judged examples without a value in the column (null or NaN; for a list of raters,
        no rater's value), >= 0.

    Raises:
        InputError: text where a number belongs (a typed file's text column, even of
            numbers; a CSV cell that does not parse as a number; text in a list of raters),
            naming the file, the column and the first ids.

    """
    import pandas as pd

    column = frame[name]
    hint = ("store the judgments as numbers, or name the judgment columns with --human"
            if chosen else "store the judgments as numbers")

    def refuse(bad: pd.Series, what: str) -> None:
        ids = _ids(frame.loc[bad[bad].index, id_column].tolist())
        first = column[bad[bad].index[0]]
        raise InputError(f"judgments {file}: judgment column {name!r} is non-numeric: it "
                         f"holds {what} ({first!r} at {id_column} {ids})", hint=hint)

    if _is_list_column(column):
        bad = column.map(lambda v: not _missing(v) and any(
            not (_missing(r) or _is_number(r)) for r in v))
        if bad.any():
            refuse(bad, "lists with text")
        return sum(1 for v in column if _missing(v) or all(_missing(r) for r in v))
    if as_text:
        parsed = pd.to_numeric(column, errors="coerce")
        bad = parsed.isna() & column.notna() & (column.astype(str) != "")  # "": missing
        if bad.any():
            refuse(bad, "text that is not a number")
        return int(parsed.isna().sum())
    bad = column.map(lambda v: isinstance(v, (str, bytes)))
    if bad.any():
        refuse(bad.astype(bool), "text")
    return int(pd.to_numeric(column, errors="coerce").isna().sum())


def _resolve_measures(asked: Sequence[str] | None, columns: Sequence[str],
                      run_float_columns: Sequence[str] | None, exclude: set[str],
                      frame: pd.DataFrame, scores_name: str) -> list[str]:
    if asked:
        out = []
        for name in asked:
            if name in columns:
                out.append(name)
                continue
            main = [f"{name}{s}" for s in MAIN_SUFFIXES if f"{name}{s}" in columns]
            if main:
                out.append(main[0])
                continue
            from pipeline.errors import did_you_mean

            raise InputError(f"scores {scores_name}: no measure {name!r}",
                             hint=did_you_mean(name, list(columns))
                             or f"it has {', '.join(c for c in columns if c not in exclude)}")
        return out
    if run_float_columns is not None:
        out = [c for c in run_float_columns if c.endswith(MAIN_SUFFIXES)]
    else:
        out = [c for c in columns if c not in exclude and _numeric_like(frame[c])]
    if not out:
        raise InputError(f"scores {scores_name}: no numeric score column",
                         hint="name the measures with --metrics")
    return out


def join_scores(scores: pd.DataFrame, judgments: pd.DataFrame, *,
                run_float_columns: Sequence[str] | None, scores_name: str,
                judgments_name: str, humans: Sequence[str] | None,
                measures: Sequence[str] | None, system_column: str,
                input_column: str | None, id_column: str, group_by: Sequence[str],
                judgments_as_text: bool = False) -> Joined:
    """Join scores and judgments by id, with the checks of bad input.

    Args:
        scores: the run's examples or a table of scores, one row per id (kept, with a
            run's measure columns renamed ``METRIC.MEASURE``, as ``Joined.scores``).
        judgments: the judgments, one row per judged id.
        run_float_columns: a run's score columns (None: a table).
        scores_name: the scores' path, for errors.
        judgments_name: the judgments' path, for errors.
        humans: judgment columns (None: every numeric or list column not otherwise used).
        measures: score columns (None: defaults, see :func:`pipeline.api.agree`).
        system_column: what a system is (judgments first, else scores).
        input_column: what an input is (None: ``input`` or ``document`` when present,
            else one row per system).
        id_column: the id column of both tables.
        group_by: subset columns (judgments first, else scores).
        judgments_as_text: the judgments file keeps every cell as text (CSV), so numbers
            are parsed from it; otherwise a judgment column of text is refused.

    Returns:
        :class:`Joined`, whose notes count per judgment column the judged examples
        without a value (null or NaN), left out of that column's coefficients.

    Raises:
        InputError: a missing id, system, input, human or group column; duplicated ids;
            judged ids absent from the scores; a judgment column of text (in CSV: a cell
            that is not a number), naming the file and the column; no judged example left.

    """
    if run_float_columns is not None:
        # a run's measure columns {metric}_{measure} go by their names METRIC.MEASURE
        from pipeline.metrics.registry import measure_of_column

        names = {}
        for column in run_float_columns:
            pair = measure_of_column(column)
            if pair is not None:
                names[column] = ".".join(pair)
        scores = scores.rename(columns=names)
        run_float_columns = list(names.values())
    for frame, what, name in ((scores, "scores", scores_name),
                              (judgments, "judgments", judgments_name)):
        if id_column not in frame.columns:
            raise InputError(f"{what} {name} has no id column {id_column!r}",
                             hint=f"its columns: {', '.join(map(str, frame.columns))}; "
                                  "name it with --id-column")
        _duplicates(frame, id_column, what, name)
    notes = []
    sid, jid = scores[id_column], judgments[id_column]
    if sid.dtype != jid.dtype:  # e.g. CSV text ids against a run's integer ids
        scores = scores.assign(**{id_column: sid.astype(str)})
        judgments = judgments.assign(**{id_column: jid.astype(str)})
    missing = judgments[id_column][~judgments[id_column].isin(scores[id_column])]
    if len(missing):
        raise InputError(f"judgments {judgments_name}: {len(missing)} judged "
                         f"{id_column}{'s are' if len(missing) > 1 else ' is'} not in the "
                         f"scores {scores_name}: "
                         f"{_ids(missing.tolist())}")
    unjudged = int((~scores[id_column].isin(judgments[id_column])).sum())
    if unjudged:
        notes.append(f"{unjudged} scored examples have no judgment and are left out")
    judgments = judgments.copy()
    for c in judgments.columns:
        _parse_json_lists(judgments, c)

    def place(column: str, role: str) -> str:
        if column in judgments.columns:
            return "judgments"
        if column in scores.columns:
            return "scores"
        raise InputError(f"no {role} column {column!r} in the judgments {judgments_name} "
                         f"or the scores {scores_name}",
                         hint=f"the judgments have {', '.join(map(str, judgments.columns))}; "
                              f"the scores have {', '.join(map(str, scores.columns))}")

    place(system_column, "system")
    if input_column is None:
        input_column = next((c for c in INPUT_COLUMNS if c in judgments.columns
                             or c in scores.columns), None)
    else:
        place(input_column, "input")
    for g in group_by:
        place(g, "--group-by")
    from_judgments = [c for c in judgments.columns if c != id_column]
    keep_scores = [c for c in scores.columns if c not in from_judgments]
    frame = judgments.merge(scores[keep_scores], on=id_column, how="left", sort=False)
    if input_column is None:
        per_system = frame[system_column].value_counts()
        if (per_system > 1).any():
            raise InputError(f"no input column: the judgments have no {' or '.join(INPUT_COLUMNS)}"
                             f" column and {int((per_system > 1).sum())} systems have several "
                             "rows", hint="name the input column with --input-column")
    structural = {id_column, system_column, *(g for g in group_by)}
    if input_column is not None:
        structural.add(input_column)
    if humans:
        for h in humans:
            if h not in judgments.columns:
                from pipeline.errors import did_you_mean

                raise InputError(f"judgments {judgments_name} have no column {h!r}",
                                 hint=did_you_mean(h, list(map(str, judgments.columns)))
                                 or f"they have {', '.join(map(str, judgments.columns))}")
        human_list = list(humans)
    else:
        human_list = [c for c in judgments.columns if c not in structural
                      and _numeric_like(judgments[c])]
        if not human_list:
            raise InputError(f"judgments {judgments_name}: no numeric judgment column",
                             hint="name one with --human")
    for h in human_list:
        n_missing = _check_judgment_column(judgments, h, file=judgments_name,
                                           as_text=judgments_as_text, id_column=id_column,
                                           chosen=not humans)
        if n_missing:
            notes.append(f"{n_missing} judged example{'s have' if n_missing > 1 else ' has'} "
                         f"no {h!r} judgment (null or NaN) in {judgments_name} and "
                         f"{'are' if n_missing > 1 else 'is'} left out of its coefficients")
    measure_list = _resolve_measures(measures, [c for c in scores.columns if c != id_column],
                                     run_float_columns, structural | set(human_list), scores,
                                     scores_name)
    overlap = [m for m in measure_list if m in human_list]
    if overlap:
        raise InputError(f"column {overlap[0]!r} is both a measure and a judgment")
    if frame.empty:
        raise InputError(f"judgments {judgments_name} hold no example")
    return Joined(frame=frame, id_column=id_column, system_column=system_column,
                  input_column=input_column, measures=measure_list, humans=human_list,
                  notes=notes, scores=scores)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return _clean(value.item())
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def rows_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """The rows of ``agreement.parquet`` (``group`` as JSON text, null for all examples)."""
    import pyarrow as pa

    from pipeline.agree.analysis import ROW_FIELDS

    out: dict[str, list[Any]] = {f: [] for f in ROW_FIELDS}
    for r in rows:
        for f in ROW_FIELDS:
            v = r.get(f)
            if f == "group":
                v = None if v is None else json.dumps(_clean(v), sort_keys=True)
            out[f].append(v)
    types = {"value": pa.float64(), "low": pa.float64(), "high": pa.float64(),
             "epsilon": pa.float64(), "p_vs_best": pa.float64(),
             "delta_vs_rest": pa.float64(), "p_vs_rest": pa.float64(),
             "n_systems": pa.int64(), "n_inputs": pa.int64(), "n_resamples": pa.int64(),
             "rank": pa.int64()}
    return pa.table({f: pa.array(v, type=types.get(f, pa.string())) for f, v in out.items()})


def verdict(result: AgreementResult, settings: AgreeSettings) -> list[dict[str, Any]]:
    """Per human column, level and coefficient: the best measure, its ties, the ceiling.

    Returns:
        One dict per (human, level, coefficient) with ``best``, ``value``, ``low``,
        ``high``, ``indistinguishable`` (measures of the best one's cluster),
        ``ceiling`` (the raters' mean agreement, None without raters) and ``collapses``
        (groups whose agreement is significantly below the rest's).

    """
    alpha = 1 - settings.confidence
    out = []
    blocks = sorted({(r["human"], r["level"], r["coefficient"]) for r in result.rows},
                    key=lambda k: (str(k[0]), ("system", "input", "global").index(k[1]),
                                   str(k[2])))
    for human, level, name in blocks:
        rows = [r for r in result.rows if (r["human"], r["level"], r["coefficient"])
                == (human, level, name) and r["kind"] == "metric" and r["group"] is None]
        ok = [r for r in rows if r["value"] is not None and not math.isnan(r["value"])]
        if not ok:
            reason = rows[0]["reason"] if rows else None
            out.append({"human": human, "level": level, "coefficient": name, "best": None,
                        "reason": reason})
            continue
        best = max(ok, key=lambda r: r["value"])
        same = [r["measure"] for r in ok if r is not best and r.get("rank") is not None
                and r.get("rank") == best.get("rank")]
        ceiling = next((c["rater_mean"] for c in result.ceiling if (c["human"], c["level"],
                        c["coefficient"]) == (human, level, name)), None)
        collapses = [{"group": r["group"], "measure": r["measure"], "value": r["value"],
                      "delta_vs_rest": r["delta_vs_rest"], "p_vs_rest": r["p_vs_rest"]}
                     for r in result.rows if r["group"] is not None and (r["human"],
                     r["level"], r["coefficient"]) == (human, level, name)
                     and r["measure"] == best["measure"] and r["p_vs_rest"] is not None
                     and r["p_vs_rest"] < alpha and (r["delta_vs_rest"] or 0) < 0]
        out.append({"human": human, "level": level, "coefficient": name,
                    "best": best["measure"], "value": best["value"], "low": best["low"],
                    "high": best["high"], "indistinguishable": same,
                    "tested": best.get("rank") is not None, "ceiling": ceiling,
                    "collapses": collapses})
    return out


def result_document(result: AgreementResult, *, settings: AgreeSettings, signature: str,
                    inputs: dict[str, Any], version: str) -> dict[str, Any]:
    """The ``agreement.json`` document (NaN written as null)."""
    from dataclasses import asdict

    return _clean({"tool": "overlap agree", "version": version, "signature": signature,
                   "settings": {**asdict(settings),
                                "epsilon": "auto" if settings.epsilon is None
                                else settings.epsilon},
                   "inputs": inputs, "verdict": verdict(result, settings),
                   "rows": result.rows, "tests": result.tests, "ceiling": result.ceiling,
                   "scatter": result.scatter, "notes": result.notes})


def _num(v: Any, fmt: str = ".3f") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    text = format(v, fmt)
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.000"


def _p(p: Any, n_resamples: int) -> str:
    """A resampling p-value; 0 is written as below the smallest one the resamples give."""
    if p == 0 and n_resamples > 0:
        return f"< {1 / n_resamples:.2g}"
    return _num(p, ".3g")


def _group_text(group: dict[str, Any] | None) -> str:
    # column names and values are data: control and bidi characters escaped (as score's table)
    return "(all)" if not group else ",".join(f"{safe(k)}={safe(v)}" for k, v in group.items())


def _against_ceiling(v: dict[str, Any]) -> str:
    """The best measure against the raters' ceiling, in words (its interval decides)."""
    ceiling, low, high = v["ceiling"], v.get("low"), v.get("high")
    shown = f"a rater against the others: {_num(ceiling)}"
    if any(x is None or (isinstance(x, float) and math.isnan(x)) for x in (ceiling, low, high)):
        return shown
    if high < ceiling:
        return f"less well than a rater does ({shown})"
    if low > ceiling:
        return f"better than a rater does ({shown})"
    return f"as well as a rater does, within its interval ({shown})"


COEFFICIENT_LABELS = {"kendall": "Kendall tau-b", "kendall_c": "Kendall tau-c",
                      "pearson": "Pearson r", "spearman": "Spearman rho",
                      "acc23": "acc23", "tau23": "tau23"}


def summary_text(document: dict[str, Any]) -> str:
    """The terminal summary: the verdict first, then every row.

    Args:
        document: an ``agreement.json`` document (:func:`result_document`).

    Returns:
        Lines of text, no trailing newline. Measure, human and group column names and group
        values are data: their control and bidirectional-format characters are escaped (a
        newline as ``\\x0a``, U+202E as ``\\u202e``; :func:`pipeline.printable.safe`), as in
        ``overlap score``'s summary table.

    """
    lines = []
    n_boot = int(document.get("settings", {}).get("n_resamples") or 0)
    n_perm = int(document.get("settings", {}).get("n_permutations") or 0)
    for v in document["verdict"]:
        head = (f"{safe(v['human'])}, {v['level']} level, "
                f"{COEFFICIENT_LABELS.get(v['coefficient'], v['coefficient'])}: ")
        if v.get("best") is None:
            lines.append(head + f"undefined ({v.get('reason') or 'no value'})")
            continue
        text = (head + f"{safe(v['best'])} agrees best, {_num(v['value'])} "
                f"[{_num(v['low'])}, {_num(v['high'])}]")
        if v.get("tested"):
            same = v["indistinguishable"]
            text += ("; indistinguishable from it: " + ", ".join(map(safe, same)) if same
                     else "; every other measure agrees significantly less")
        if v.get("ceiling") is not None:
            text += "; " + _against_ceiling(v)
        lines.append(text)
        for c in v.get("collapses", []):
            lines.append(f"  collapses on {_group_text(c['group'])}: {_num(c['value'])}, "
                         f"{_num(c['delta_vs_rest'], '+.3f')} against the rest "
                         f"(p {_p(c['p_vs_rest'], n_boot)})")
    alphas = {(c["human"]): c for c in document["ceiling"]}
    for human, c in alphas.items():
        lines.append(f"{safe(human)}: {c['n_raters']} raters, Krippendorff's alpha interval "
                     f"{_num(c['alpha_interval'])}, ordinal {_num(c['alpha_ordinal'])}")
    lines.append(f"signature: {document['signature']}")
    lines.append("")
    header = (f"{'measure':<24} {'human':<20} {'level':<7} {'coefficient':<10} "
              f"{'group':<16} {'value':>7} {'interval':>17}  note")
    lines.append(header)
    for r in document["rows"]:
        note = r.get("reason") or ""
        if r.get("rank") is not None:
            note = f"rank {r['rank']}" + (f", p vs best {_p(r['p_vs_best'], n_perm)}"
                                          if r.get("p_vs_best") is not None else "")
        if r.get("p_vs_rest") is not None:
            note = (f"{_num(r['delta_vs_rest'], '+.3f')} vs rest, "
                    f"p {_p(r['p_vs_rest'], n_boot)}")
        lines.append((f"{safe(r['measure'])[:24]:<24} {safe(r['human'])[:20]:<20} {r['level']:<7} "
                     f"{r['coefficient']:<10} {_group_text(r['group'])[:16]:<16} "
                     f"{_num(r['value']):>7} [{_num(r['low'])}, {_num(r['high'])}]".ljust(
                         len(header) - 4) + f"  {note}").rstrip())
    for p in document.get("preferences") or []:
        lines.append(f"preferences, {safe(p['measure'])}: agrees with the raters' majority on "
                     f"{_num(p['agreement'])} [{_num(p['low'])}, {_num(p['high'])}] of "
                     f"{p['n_pairs']} pairs (chance 0.5; majority a {_num(p['majority_a'], '.0%')}"
                     f", b {_num(p['majority_b'], '.0%')}, tie {_num(p['majority_tie'], '.0%')})"
                     f"; a rater agrees with the others on {_num(p['rater_agreement'])}")
    for n in document["notes"]:
        lines.append(f"note: {n}")
    return "\n".join(lines)
