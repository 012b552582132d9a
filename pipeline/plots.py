"""Pictures of comparisons (matplotlib, Agg backend, imported only when a plot is asked for)."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pipeline.compare import Comparison

_ALARM = "#c0392b"
# Matplotlib's config and font cache directory for this process (see below).
_MPL_DIR: str | None = None


def _private_matplotlib_dirs() -> None:
    """Point matplotlib's config/cache dir at a private temp dir, unless the user set one.

    Without it matplotlib writes ``~/.config/matplotlib`` and ``~/.cache/matplotlib`` (its
    font list) in the user's home. Must run before matplotlib is imported; the directory
    is removed when the process exits.
    """
    global _MPL_DIR
    if os.environ.get("MPLCONFIGDIR") or _MPL_DIR is not None:
        return
    import atexit
    import shutil
    import tempfile

    _MPL_DIR = tempfile.mkdtemp(prefix="overlap-mpl-")
    os.environ["MPLCONFIGDIR"] = _MPL_DIR
    atexit.register(shutil.rmtree, _MPL_DIR, ignore_errors=True)
_CALM = "#2e6f9e"


# The PNG ``Software`` text chunk of every plot this package draws: a later plot replaces only
# a PNG that carries it (or one drawn by matplotlib before the mark), never another file.
PLOT_MARK = "overlap-pipeline compare --plot"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _is_our_plot(head: bytes) -> bool:
    return head.startswith(_PNG_MAGIC) and (
        b"tEXtSoftware\x00" + PLOT_MARK.encode() in head
        or b"tEXtSoftware\x00Matplotlib" in head)


def check_plot_output(path: str) -> None:
    """Refuse, before any work, a plot file :func:`plot_deltas` would refuse to replace.

    Args:
        path: the PNG file to write (local path).

    Raises:
        OutputExistsError: ``path`` is a symbolic link, a directory, a file inside a complete
            overlap score run's directory, or an existing file that is not a plot drawn by
            this package (exit 3; nothing is written).

    """
    from pipeline.errors import OutputExistsError
    from pipeline.io.write import check_output_place, link_error

    if os.path.islink(path):
        raise link_error(path, path, what="plot")
    if os.path.isdir(path):
        raise OutputExistsError(f"plot {path} is a directory; refusing to replace it",
                                hint="name a file, e.g. --plot delta.png")
    check_output_place(path)  # never a file inside a score run's directory
    if not os.path.exists(path):
        return  # a missing directory fails the drawing only (a warning: the verdict stands)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = b""
    if not _is_our_plot(head):
        raise OutputExistsError(f"plot {path} exists and is not a plot written by overlap; "
                                "refusing to replace it",
                                hint="choose a new file, or remove this one yourself")


def plot_deltas(comparison: Comparison, path: str, *, title: str | None = None,
                dpi: int = 100) -> None:
    """Draw the per-example delta distribution per measure, with the mean and its interval.

    One histogram per compared measure of ``candidate - baseline`` over the paired examples
    (examples that did not change are counted in the panel's legend, not drawn, so that a
    small moved subset stays visible), the mean delta as a vertical line and its confidence
    interval as a shaded span. Below, one zoomed strip per measure: the mean delta with its
    interval as an error bar against the tolerated band ``[-band, band]`` (grey) and zero;
    alarming measures are red. Overall rows only (not per group).

    Args:
        comparison: the result of :func:`pipeline.compare.compare_examples`.
        path: the PNG file to write (its directory must exist).
        title: a title for the figure (default: counts and settings).
        dpi: resolution; the figure is 11 inches wide.

    Raises:
        InputError: the file cannot be written.
        OutputExistsError: ``path`` exists and is not a plot of ours (see
            :func:`check_plot_output`).

    """
    from pipeline.compare import ALL_GROUP
    from pipeline.errors import InputError

    check_plot_output(path)

    _private_matplotlib_dirs()
    try:
        import matplotlib
    except ImportError:
        raise InputError("--plot needs matplotlib",
                         hint="pip install 'overlap-pipeline[plots]'") from None

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    measures = comparison.measures
    overall = comparison.rows[comparison.rows["group"] == ALL_GROUP]
    overall = overall.set_index(overall["metric"] + "." + overall["measure"])
    n_cols = 2 if len(measures) > 1 else 1
    n_rows = math.ceil(len(measures) / n_cols)
    strip_h = 0.45 * len(measures) + 1.0
    fig = plt.figure(figsize=(11, 3.0 * n_rows + strip_h + 0.8))
    grid = fig.add_gridspec(n_rows + 1, n_cols, height_ratios=[3.0] * n_rows + [strip_h])
    level = f"{comparison.confidence:.0%}"
    for k, m in enumerate(measures):
        ax = fig.add_subplot(grid[k // n_cols, k % n_cols])
        row = overall.loc[m]
        color = _ALARM if row["alarm"] else _CALM
        deltas = comparison.paired[f"delta:{m}"].to_numpy()
        moved = deltas[deltas != 0.0]
        if len(moved):
            edge = max(float(np.abs(moved).max()), 1e-6)
            n_bins = min(61, max(11, 2 * int(math.sqrt(len(moved))) + 1))
            ax.hist(moved, bins=np.linspace(-edge, edge, n_bins).tolist(), color=color, alpha=0.55,
                    label=f"{len(moved)} moved, {len(deltas) - len(moved)} unchanged")
        else:
            ax.text(0.5, 0.5, "no example changed", transform=ax.transAxes, ha="center")
            ax.set_xlim(-0.05, 0.05)
        if np.isfinite(row["ci_low"]):
            ax.axvspan(row["ci_low"], row["ci_high"], color=color, alpha=0.25,
                       label=f"{level} interval of the mean")
        ax.axvline(row["delta"], color=color, lw=2, label=f"mean delta {row['delta']:+.4f}")
        ax.axvline(0.0, color="black", lw=0.8)
        state = "ALARM" if row["alarm"] else "no alarm"
        ax.set_title(f"{m}: {row['delta']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]"
                     f"  {state}", fontsize=10, color=color if row["alarm"] else "black")
        ax.set_xlabel("per-example delta (candidate - baseline)")
        ax.set_ylabel("examples")
        ax.legend(fontsize=7, loc="upper left")
    strip = fig.add_subplot(grid[n_rows, :])
    band = comparison.band
    reach = max([band] + [abs(float(overall.loc[m, c])) for m in measures
                          for c in ("delta", "ci_low", "ci_high")
                          if np.isfinite(overall.loc[m, c])])
    strip.axvspan(-band, band, color="0.85", label=f"band +/-{band:g}")
    strip.axvline(0.0, color="black", lw=0.8)
    for y, m in enumerate(measures):
        row = overall.loc[m]
        color = _ALARM if row["alarm"] else _CALM
        if np.isfinite(row["ci_low"]):
            strip.errorbar(row["delta"], y, xerr=[[row["delta"] - row["ci_low"]],
                                                  [row["ci_high"] - row["delta"]]],
                           fmt="o", color=color, capsize=4)
        else:
            strip.plot(row["delta"], y, "o", color=color)
    strip.set_yticks(range(len(measures)), list(measures))
    strip.set_ylim(-0.6, len(measures) - 0.4)
    strip.invert_yaxis()
    strip.set_xlim(-1.3 * reach, 1.3 * reach)
    strip.set_xlabel(f"mean delta with its {level} paired bootstrap interval")
    strip.legend(fontsize=7, loc="upper right")
    fig.suptitle(title or (
        f"candidate - baseline: {len(comparison.paired)} paired examples, "
        f"{len(comparison.baseline_only)} only in baseline, "
        f"{len(comparison.candidate_only)} only in candidate; "
        f"{comparison.n_bootstrap} resamples, seed {comparison.seed}"), fontsize=10)
    fig.tight_layout()
    tmp = f"{path}.tmp-{os.getpid()}.png"
    try:
        fig.savefig(tmp, dpi=dpi, format="png", metadata={"Software": PLOT_MARK})
        check_plot_output(path)
        os.replace(tmp, path)
    except OSError as err:
        raise InputError(f"cannot write the plot {path}: {err}") from err
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)


__all__ = ["PLOT_MARK", "check_plot_output", "plot_deltas"]
