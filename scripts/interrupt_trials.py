"""Interrupt trials: SIGINT / SIGTERM at random moments of `overlap score`, counted.

    .venv/bin/python scripts/interrupt_trials.py                       # 20 per signal, per engine
    .venv/bin/python scripts/interrupt_trials.py --trials 4 --rows 200000 --engine ray
    .venv/bin/python scripts/interrupt_trials.py --to group   # as a terminal's Ctrl-C does

Each trial runs `overlap score INPUT --output OUT --engine ENGINE` as its own process in a
new session, with a TMPDIR of its own (so Ray's temp dir and every process the run starts,
which inherit that TMPDIR, can be told apart from anything else on the machine), and sends
one signal at a moment picked in one of the run's phases, in turn:

- ``start``, ``read_check``, ``score``, ``aggregate``: a moment drawn uniformly inside the
  phase's window, the windows taken from an uninterrupted calibration run of the same
  command (its manifest's ``seconds``; a phase shorter than 0.3 s gets a 0.3 s window);
- ``stop``: after the result was printed (the last stdout line read), a delay drawn in
  0-0.5 s: the local Ray is being stopped then (an in-process run has nearly nothing left).

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
MIN_WINDOW_S = 0.3
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


def windows(calibration: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Phase -> (from, to) seconds after the process started, from a calibration run."""
    t = calibration["plan"] + calibration.get("import", 1.0)
    out = {}
    for phase, key in (("start", "engine_start"), ("read_check", "read_check"),
                       ("score", "score"), ("aggregate", "aggregate")):
        length = calibration.get(key, 0.0)
        out[phase] = (t, t + max(length, MIN_WINDOW_S))
        t += length
    return out


def base_command(inputs: Path, out: Path, engine: str) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", "score", str(inputs), "--output", str(out),
            "--engine", engine]


def calibrate(inputs: Path, work: Path, engine: str) -> dict[str, float]:
    """Run once without a signal; stage seconds from the manifest, import time measured."""
    tmp = work / f"cal-{engine}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("RAY_ADDRESS", None)
    start = time.monotonic()
    res = subprocess.run(base_command(inputs, tmp / "out", engine), env=env,
                         capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - start
    if res.returncode != 0:
        sys.exit(f"calibration run failed ({res.returncode}):\n{res.stderr}")
    seconds = json.loads((tmp / "out" / "manifest.json").read_text())["seconds"]
    seconds["import"] = max(0.0, wall - seconds["total"] - 2.0)  # minus the stop, roughly
    seconds["wall"] = wall
    shutil.rmtree(tmp, ignore_errors=True)
    return seconds


def trial(inputs: Path, work: Path, engine: str, sig: int, phase: str,
          span: tuple[float, float], rng: random.Random, *, to_group: bool,
          faulthandler: bool) -> dict:
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
    if phase == "stop":
        printed.wait(timeout=600)
        time.sleep(rng.uniform(0.0, 0.5))
    else:
        at = rng.uniform(*span)
        while time.monotonic() - start < at and proc.poll() is None:
            time.sleep(0.01)
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
                        help="only these phases (repeatable; default all, in turn)")
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
    phases = args.phase or list(PHASES)
    loads = [os.getloadavg()[0]]
    records = []
    for engine in engines:
        cal = calibrate(inputs, work, engine)
        spans = windows(cal)
        print(f"{engine}: calibration run {cal['wall']:.1f} s; phases "
              + ", ".join(f"{p} {a:.1f}-{b:.1f} s" for p, (a, b) in spans.items()),
              flush=True)
        for sig in sigs:
            for i in range(args.trials):
                phase = phases[i % len(phases)]
                for _attempt in range(3):
                    r = trial(inputs, work, engine, sig, phase, spans.get(phase, (0, 0)),
                              rng, to_group=args.to == "group",
                              faulthandler=args.faulthandler)
                    loads.append(os.getloadavg()[0])
                    if not r["missed"]:
                        break
                records.append(r)
                verdict = "clean" if r["clean"] else ("missed" if r["missed"] else "FAILED")
                extra = "" if r["clean"] else (
                    f" stderr={r['stderr_tail']} left={r['left']} ray_dirs={r['ray_dirs']}"
                    f" cores={r['cores']}")
                print(f"{engine:5} {r['signal']:7} {phase:10} at {r['sent_at_s']:6.2f} s: "
                      f"exit {r['code']} after {r['exit_after_s']:.2f} s  {verdict}{extra}",
                      flush=True)
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
