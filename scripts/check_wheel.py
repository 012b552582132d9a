"""Check the wheel: built once, installed where there is no compiler, it scores without compiling.

    .venv/bin/python scripts/check_wheel.py [--wheel dist/overlap_pipeline-*.whl] [--keep]

Steps (each printed with its seconds):

1. ``python -m build --wheel`` in the source tree (unless ``--wheel`` names one already
   built), which compiles the kernels (or copies them from ``build/kernels/``);
2. lists the wheel's compiled modules (``pipeline/_kernels*.so``);
3. makes a fresh venv and installs the wheel there with ``CC=false``, ``CXX=false`` and a
   ``PATH`` holding only the venv (no gcc, cc or clang to find): dependencies come from the
   package index as wheels, nothing is built;
4. scores the bundled REALSumm data there (``overlap score``, default config: bootstrap 1,000)
   with an empty ``NUMBA_CACHE_DIR``, and checks that :func:`pipeline.compiled.builds` names
   no ``jit`` kernel, that numba was not imported, and that numba's cache stayed empty.

Exits 1 when a check fails. Needs ``build`` (the ``bench`` extra) and the package index.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHECK = r"""
import json, sys
from pipeline import compiled
from pipeline.cli import main
try:
    main(["score", sys.argv[1], "--references", sys.argv[2], "--output", sys.argv[3]])
except SystemExit as e:
    assert not e.code, e.code
print(json.dumps({"builds": sorted(set(compiled.builds().values())),
                  "numba_imported": "numba" in sys.modules}))
"""


def _step(label: str, cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    print(f"{label}: {time.perf_counter() - start:.1f} s", flush=True)
    if run.returncode:
        sys.exit(f"failed ({run.returncode}): {' '.join(cmd)}\n{run.stdout[-3000:]}"
                 f"{run.stderr[-3000:]}")
    return run


def main() -> None:
    """Build (or take) the wheel, install it without a compiler, score, check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", help="an already built wheel (default: build one)")
    parser.add_argument("--keep", action="store_true", help="keep the venv and the run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="overlap-wheel-"))
    if args.wheel:
        wheel = Path(args.wheel)
    else:
        _step("python -m build --wheel", [sys.executable, "-m", "build", "--wheel",
                                          "--outdir", str(work / "dist"), str(ROOT)])
        wheel = Path(glob.glob(str(work / "dist" / "*.whl"))[0])
    with zipfile.ZipFile(wheel) as z:
        modules = [(i.filename, i.file_size) for i in z.infolist()
                   if i.filename.startswith("pipeline/_kernels")]
    print(f"wheel: {wheel.name} ({wheel.stat().st_size / 1e6:.1f} MB)")
    for name, size in modules:
        print(f"  {name} ({size / 1e6:.1f} MB)")
    if not modules:
        sys.exit("the wheel holds no compiled kernels (pipeline/_kernels*.so)")
    venv = work / "venv"
    _step("python -m venv", [sys.executable, "-m", "venv", str(venv)])
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    bare.update(PATH=str(venv / "bin"), CC="false", CXX="false")
    py = str(venv / "bin" / "python")
    _step("pip install the wheel (no compiler on PATH, CC=false)",
          [py, "-m", "pip", "install", "-q", "--only-binary", ":all:", str(wheel)], env=bare)
    data = ROOT / "pipeline" / "data" / "realsumm"
    cache = work / "numba-cache"
    cache.mkdir()
    run = _step("overlap score of the bundled data (bootstrap 1,000)",
                [py, "-c", CHECK, str(data / "predictions"), str(data / "references.parquet"),
                 str(work / "run")], env={**bare, "NUMBA_CACHE_DIR": str(cache)},
                cwd=str(work))
    found = json.loads(run.stdout.strip().splitlines()[-1])
    cached = [p.name for p in cache.rglob("*") if p.is_file()]
    print(f"kernel builds used: {', '.join(found['builds'])}; numba imported: "
          f"{found['numba_imported']}; files in numba's cache: {len(cached)}")
    ok = "jit" not in found["builds"] and not found["numba_imported"] and not cached
    if not args.keep:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    else:
        print(f"kept: {work}")
    print("ok: the installed wheel compiles nothing" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
