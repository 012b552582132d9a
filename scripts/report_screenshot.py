"""Regenerate docs/report.png, the README's picture of `overlap report`, from the bundled data.

Scores the bundled REALSumm predictions (baseline, ungrouped so the page is short) and a
copy with every 10th prediction cut to half its words (candidate), writes the report
comparing them, and photographs it with headless Chromium (Debian package `chromium`).

    .venv/bin/python scripts/report_screenshot.py [--output docs/report.png]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

import pandas as pd
from PIL import Image

from pipeline import api
from pipeline.config import ScoreConfig

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "pipeline" / "data" / "realsumm"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(ROOT / "docs" / "report.png"))
    parser.add_argument("--html", default=None, help="also keep the HTML report here")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        preds = pd.read_parquet(DATA / "predictions").sort_values("id").reset_index(drop=True)
        cut = preds.index[::10]
        cand = preds.copy()
        cand.loc[cut, "prediction"] = [" ".join(t.split()[: len(t.split()) // 2])
                                       for t in cand.loc[cut, "prediction"]]
        cand.to_parquet(work / "candidate.parquet", index=False)
        config = ScoreConfig(engine="local", keep_text=True)
        refs = str(DATA / "references.parquet")
        api.score(str(DATA / "predictions"), references=refs, output=str(work / "base"),
                  config=config, run_id="baseline")
        api.score(str(work / "candidate.parquet"), references=refs,
                  output=str(work / "cand"), config=config, run_id="candidate")
        html = Path(args.html) if args.html else work / "report.html"
        api.report(str(work / "cand"), output=str(html), baseline=str(work / "base"), top=2)
        shot = work / "shot.png"
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-quic", "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={work / 'profile'}", "--window-size=1100,2700",
                        "--hide-scrollbars", f"--screenshot={shot}", html.as_uri()],
                       check=True, capture_output=True, timeout=120)
        image = Image.open(shot).convert("RGB")
        image = image.resize((image.width * 2 // 3, image.height * 2 // 3), Image.LANCZOS)
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        image.quantize(colors=64).save(args.output, optimize=True)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
