"""Interrupt trials: SIGINT / SIGTERM at random moments of `overlap score`, counted.

    .venv/bin/python scripts/interrupt_trials.py                       # 20 per signal, per engine
    .venv/bin/python scripts/interrupt_trials.py --trials 4 --rows 200000 --engine ray
    .venv/bin/python scripts/interrupt_trials.py --to group   # as a terminal's Ctrl-C does

Each trial runs `overlap score INPUT --output OUT --engine ENGINE` as its own process in a
new session, with a TMPDIR of its own (so Ray's temp dir and every process the run starts,
which inherit that TMPDIR, can be told apart from anything else on the machine), and sends
one signal at a moment of one of the run's phases, taken in turn, each found by what the run
shows (not by the clock: under a shared machine's load the same run took 35 s or 80 s):

- ``start``: Ray's session directory appeared in the run's TMPDIR (``ray.init`` is under
  way), then 0-3 s (in-process: 0.3-2 s after the launch: imports, the plan);
- ``read_check``: the driver's core worker log appeared (``ray.init`` is done; in-process:
  the staging directory appeared), then 0-2 s;
- ``score``: ``checks.json`` appeared in the staging directory (the check stage passed),
  then 0-4 s;
- ``aggregate``: every partition's completion marker appeared, then 0-1.5 s;
- ``stop``: the result was printed (its last stdout line read), then 0-0.5 s: the local Ray
  is being stopped (an in-process run has nearly nothing left to do).

What had happened when the signal was sent is recorded with it (``seen``: Ray up, checked,
partitions scored, result printed).

A trial is clean when: the exit code is 128 + the signal (130 / 143); stderr is exactly one
line and it starts with ``Error: `` (no traceback, no Ray noise); 5 s after the exit no
process carrying the trial's TMPDIR is alive; the TMPDIR holds no Ray temp dir
(``overlap-ray-*``). A trial whose run had ended before the signal was sent is counted as
``missed`` (not clean, not failed) and retried up to twice; so is one that landed while
the process was exiting after its result and clean-up (it then ignores signals: exit 0,
output complete, nothing on stderr, nothing left). The inputs are the benchmark's
(scripts/bench_pipeline.py ``make_inputs``: resampled real texts, 8 inline shards).

Leftover processes of a trial are killed by PID (they carry its TMPDIR) before the next
trial; nothing else on the machine is touched. Prints one line per trial, then the counts
per engine and signal and per phase, and the load average.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pipeline import make_inputs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("start", "read_check", "score", "aggregate", "stop")
PARTITION_ROWS = 50_000  # the default: partitions of a run
GRACE_S = 5.0


def processes_with_env(name: str, value: str) -> list[int]:
    """PIDs of live processes (readable by us) whose environment holds ``name=value``."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found.append(int(entry))
    return sorted(found)


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()[:60]
    except OSError:
        return "?"


def base_command(inputs: Path, out: Path, engine: str) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", "score", str(inputs), "--output", str(out),
            "--engine", engine]


def trial(inputs: Path, work: Path, engine: str, sig: int, phase: str, n_parts: int,
          rng: random.Random, *, to_group: bool, faulthandler: bool) -> dict:
    """One run, one signal; what came out of it."""
    tmp = Path(tempfile.mkdtemp(prefix="t-", dir=work))
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("RAY_ADDRESS", None)
    if faulthandler:
        env["PYTHONFAULTHANDLER"] = "1"

    def child_setup() -> None:
        # A terminal's foreground job: SIGINT at its default (a background job inherits it
        # ignored), core dumps on (where the machine writes them).
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if faulthandler:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,
                                                      resource.RLIM_INFINITY))

    start = time.monotonic()
    proc = subprocess.Popen(base_command(inputs, tmp / "out", engine), env=env, cwd=tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=child_setup)
    out_lines: list[str] = []
    err_chunks: list[str] = []
    printed = threading.Event()

    def read_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out_lines.append(line)
            if line.startswith("output: "):
                printed.set()

    def read_err() -> None:
        assert proc.stderr is not None
        err_chunks.append(proc.stderr.read())

    readers = [threading.Thread(target=read_out, daemon=True),
               threading.Thread(target=read_err, daemon=True)]
    for r in readers:
        r.start()
    def staging() -> Path | None:
        return next(tmp.glob(".out.overlap-staging-*"), None)

    def seen() -> dict:
        st = staging()
        return {"ray_up": any(tmp.glob("overlap-ray-*/session_latest/logs/python-core-driver-*")),
                "checked": st is not None and (st / "checks.json").exists(),
                "scored": 0 if st is None else len(list(st.glob("completions/*.json"))),
                "printed": printed.is_set()}

    def until(condition) -> None:
        deadline = time.monotonic() + 900
        while proc.poll() is None and not condition() and time.monotonic() < deadline:
            time.sleep(0.02)

    if phase == "start":
        if engine == "ray":
            until(lambda: any(tmp.glob("overlap-ray-*/session_*")))
            time.sleep(rng.uniform(0.0, 3.0))
        else:
            time.sleep(rng.uniform(0.3, 2.0))
    elif phase == "read_check":
        until(lambda: seen()["ray_up"] if engine == "ray" else staging() is not None)
        time.sleep(rng.uniform(0.0, 2.0))
    elif phase == "score":
        until(lambda: seen()["checked"])
        time.sleep(rng.uniform(0.0, 4.0))
    elif phase == "aggregate":
        until(lambda: seen()["scored"] >= n_parts)
        time.sleep(rng.uniform(0.0, 1.5))
    else:  # stop
        until(printed.is_set)
        time.sleep(rng.uniform(0.0, 0.5))
    state = seen()
    sent_at = time.monotonic() - start
    missed = proc.poll() is not None
    if not missed:
        if to_group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    try:
        proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    exited_at = time.monotonic() - start
    for r in readers:
        r.join()
    time.sleep(GRACE_S)
    left = processes_with_env("TMPDIR", str(tmp))
    left_names = [command_name(p) for p in left]
    for pid in left:  # ours (they carry this trial's TMPDIR)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    ray_dirs = sorted(p.name for p in tmp.glob("overlap-ray-*"))
    cores = sorted(str(p) for p in tmp.glob("core*"))
    err = "".join(err_chunks)
    lines = err.strip().splitlines()
    want = 128 + sig
    clean = (proc.returncode == want and len(lines) == 1 and lines[0].startswith("Error: ")
             and not left and not ray_dirs)
    # The signal came as the process was exiting, after its result and its clean-up: it
    # ignores signals then and exits 0 (an ordinary end, as if the signal had come later).
    if (proc.returncode == 0 and not lines and not left and not ray_dirs
            and any(line.startswith("output: ") for line in out_lines)):
        missed = True
    result = {"engine": engine, "signal": signal.Signals(sig).name, "phase": phase,
              "seen": state,
              "sent_at_s": round(sent_at, 2), "exit_after_s": round(exited_at - sent_at, 2),
              "code": proc.returncode, "missed": missed, "clean": clean and not missed,
              "stderr_lines": len(lines), "traceback": "Traceback" in err,
              "left": left_names, "ray_dirs": ray_dirs, "cores": cores,
              "stderr_tail": lines[-3:] if not clean else lines,
              "stderr": lines[:60]}
    if not cores:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        result["kept"] = str(tmp)
        for name in ("out",):
            shutil.rmtree(tmp / name, ignore_errors=True)
        for staging in tmp.glob(".out.overlap-staging-*"):
            shutil.rmtree(staging, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_500_000)
    parser.add_argument("--trials", type=int, default=20,
                        help="trials per signal and engine (phases taken in turn)")
    parser.add_argument("--engine", action="append", choices=("ray", "local"),
                        help="engines (repeatable; default both)")
    parser.add_argument("--signal", action="append", choices=("INT", "TERM"),
                        help="signals (repeatable; default both)")
    parser.add_argument("--phase", action="append", choices=PHASES,
                        help="only these phases (repeatable; default all, in turn; an "
                        "in-process run: all but stop)")
    parser.add_argument("--to", choices=("pid", "group"), default="pid",
                        help="send to the process (a scheduler's kill) or to its process "
                        "group (a terminal's Ctrl-C reaches every process of the job)")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                          "overlap-interrupts"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--faulthandler", action="store_true",
                        help="PYTHONFAULTHANDLER=1 and core dumps on in the runs; a trial "
                        "that left a core file keeps its TMPDIR")
    parser.add_argument("--json", help="also write every trial's record here")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    inputs = make_inputs(work, args.rows)["inline"]
    rng = random.Random(args.seed)
    engines = args.engine or ["ray", "local"]
    sigs = [getattr(signal, "SIG" + s) for s in (args.signal or ["INT", "TERM"])]
    # An in-process run has no stop phase: it exits right after printing its result.
    phases_of = {e: args.phase or [p for p in PHASES if e == "ray" or p != "stop"]
                 for e in engines}
    loads = [os.getloadavg()[0]]
    records = []
    n_parts = math.ceil(args.rows / PARTITION_ROWS)
    for engine in engines:
        for sig in sigs:
            for i in range(args.trials):
                phase = phases_of[engine][i % len(phases_of[engine])]
                for _attempt in range(3):
                    r = trial(inputs, work, engine, sig, phase, n_parts, rng,
                              to_group=args.to == "group", faulthandler=args.faulthandler)
                    loads.append(os.getloadavg()[0])
                    if not r["missed"]:
                        break
                records.append(r)
                verdict = "clean" if r["clean"] else ("missed" if r["missed"] else "FAILED")
                extra = "" if r["clean"] else (
                    f" stderr={r['stderr_tail']} left={r['left']} ray_dirs={r['ray_dirs']}"
                    f" cores={r['cores']}")
                st = r["seen"]
                state = (f"[ray {'up' if st['ray_up'] else '-'}, checked {st['checked']:d}, "
                         f"scored {st['scored']}/{n_parts}, printed {st['printed']:d}]")
                print(f"{engine:5} {r['signal']:7} {phase:10} at {r['sent_at_s']:6.2f} s "
                      f"{state}: exit {r['code']} after {r['exit_after_s']:.2f} s  "
                      f"{verdict}{extra}", flush=True)
    print()
    totals: Counter = Counter()
    for r in records:
        key = (r["engine"], r["signal"])
        totals[key + ("n",)] += 1
        totals[key + ("clean",)] += r["clean"]
        totals[key + ("missed",)] += r["missed"]
        totals[key + ("sigsegv",)] += r["code"] == -signal.SIGSEGV
        totals[key + ("traceback",)] += r["traceback"]
        totals[key + ("leftover",)] += bool(r["left"] or r["ray_dirs"])
    for engine in engines:
        for sig in sigs:
            key = (engine, signal.Signals(sig).name)
            print(f"{engine:5} {key[1]:7}: clean {totals[key + ('clean',)]} of "
                  f"{totals[key + ('n',)]} (missed {totals[key + ('missed',)]}, SIGSEGV "
                  f"{totals[key + ('sigsegv',)]}, traceback {totals[key + ('traceback',)]}, "
                  f"leftovers {totals[key + ('leftover',)]})")
    by_phase: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in records:
        if not r["missed"]:
            by_phase[(r["engine"], r["phase"])].append(r["clean"])
    print("per phase (both signals): " + "; ".join(
        f"{e} {p} {sum(v)}/{len(v)}" for (e, p), v in sorted(by_phase.items())))
    print(f"load average (1 min) during the trials: min {min(loads):.1f}, "
          f"max {max(loads):.1f}; {os.cpu_count()} CPUs; signal sent to the {args.to}")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
