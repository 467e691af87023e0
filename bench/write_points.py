"""Every write point: fail each one (ENOSPC, EIO, EFBIG, EDQUOT) and SIGKILL at each, and check what is left.

The way SQLite tests its I/O error paths, one point at a time, below Python:
strace's syscall tampering (``-e inject=SYSCALL:error=ENOSPC:when=K``,
``:signal=KILL``) fails the call itself, so the native writers (safetensors,
SQLite) meet the error exactly where Python code does.  strace traces the
main thread only (no ``-f``): its counter of calls is per thread, and the
main thread, which writes the run folder and the index, makes the same calls
in the same order every time, so "the K-th write of the main thread" is the
same call in every run.  Each trial's own trace shows which call was
tampered with; one that hit another file than the one aimed at is aimed
again once from a new trace of its scenario, then counted as ``missed``,
not as tried.

Each run is a fork of a warm process that has imported what the command
imports (torch, transformers, TrainLab), running ``trainlab``'s
``__main__`` as the interpreter would; strace attaches to the fork before
it begins (``-p``).  Imports write nothing in a run folder or the home, so
the calls there are those of a fresh ``python -m trainlab`` (a test checks
it), and a trial costs its run, not the imports.  ``--fresh`` runs every
command as a fresh process instead.

Scenarios (each from a fresh copy of the same prepared home, so its calls repeat):

  train    ``trainlab train`` of the toy fixture task (2 epochs, a checkpoint
           every epoch, the model export, eval.json, the index), in a home
           that already lists an earlier run
  resume   ``trainlab train --resume`` of a run interrupted after its first
           checkpoint
  index    ``trainlab runs`` after the index was lost: it is rebuilt from
           the run folders it knows
  textgen  ``trainlab train text-generation`` of a tiny Qwen2 decoder (the
           tests' fixture model, built here) on 16 chats: the same run folder
           and index, and its own export (the tokenizer's files, the chat
           template, the generation config)

A write point is a distinct (system call, file kind) in a scenario's main
thread, where the file kind is the path with the run folder, the home and
temporary names made generic (``RUN/.run.json.*.tmp``); for each, the first
call and, when it is another code place later in the run (the last
checkpoint, the final run.json), the last call.  Appended metrics lines are
one point (first and last), not one per line.  System calls, and what each
is failed with: write, pwrite64, ftruncate, fsync, fdatasync, rename,
renameat, mkdir (ENOSPC, EIO, EFBIG); openat when it creates a file
(O_CREAT: ENOSPC, EDQUOT, EIO); unlink, unlinkat (EIO); a SIGKILL at each.

After each trial, with the public tools only:

  reason       exit 0, or 1/2 with stderr's last line a one-line reason and
               no "Traceback" anywhere (a kill: nothing to read)
  intact       every JSON file in the run folder parses, every safetensors
               file verifies (the earlier run's too), the index passes
               SQLite's integrity check
  recovers     a run left unfinished resumes (``train --resume``) to
               completed; one that never wrote run.json restarts with the same
               command; a failed ``runs`` runs again
  index        ``trainlab runs --json`` lists every run folder, each with the
               status its run.json says, and no temporary is left behind

    python bench/write_points.py [--scenario train,resume,index,textgen] [--errors ENOSPC,EIO,EFBIG,EDQUOT,KILL]
                                 [--first-only] [--points N] [--only TEXT] [--budget SECONDS] [--fresh] [--keep] [--json]

``--first-only`` tries the first call of each point only; a point of the
resume or the listing met already in the train scenario (the same code
place and file kind) is tried once, there (the text-generation run's
own points are its export's and its data's).  ``--budget`` starts no new point
after that many seconds (the scenarios' points are taken in turn, so each is
sampled) and says how many it left.

``--quick``: the train scenario's first 3 points, ENOSPC and KILL.  The last
line is a JSON object: points found, trials tried, survived, per error, and
each failure with its reason.  Needs strace (Debian: ``apt-get install strace``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from crash_battery import FIXTURES, write_data
from pairs import bench_parser, emit, speaker

SYSCALLS = ("write", "pwrite64", "ftruncate", "fsync", "fdatasync", "rename", "renameat", "mkdir", "openat", "unlink", "unlinkat")
ERRORS = ("ENOSPC", "EIO", "EFBIG", "EDQUOT", "KILL")
# What each call can meet: a file created on a full disk or over a quota (an openat is one only with
# O_CREAT); a removal fails with an I/O error; the writes, syncs, renames and folders as before.
ERRORS_OF = {"openat": ("ENOSPC", "EDQUOT", "EIO", "KILL"), "unlink": ("EIO", "KILL"), "unlinkat": ("EIO", "KILL")}
DEFAULT_ERRORS = ("ENOSPC", "EIO", "EFBIG", "KILL")
SCENARIOS = ("train", "resume", "index", "textgen")
# the text-generation run: a tiny Qwen2 decoder and its tokenizer (the tests' fixture), chats, no sampled generations
TEXTGEN = ["--set", "template=chatml", "--set", "max_length=64", "--set", "batch_size=8", "--set", "device=cpu",
           "--set", "precision=fp32", "--set", "eval_generations=0"]  # fmt: skip
# no time-driven writes (samples, time-based checkpoints): the main thread then makes the same calls every run
TRAIN = ["--epochs", "2", "--set", "log_interval=0", "--set", "telemetry_every=0", "--set", "checkpoint_every_minutes=0"]
_CALL = re.compile(r"^(?P<name>\w+)\((?P<args>.*)\)\s+=\s+(?P<result>.*)$")
_FD_PATH = re.compile(r"^(?:-?\d+|AT_FDCWD)<(?P<path>[^>]*)>")
_TEMPORARY = re.compile(r"^\.(.+\.[A-Za-z0-9_]{8}\.tmp|tmp[A-Za-z0-9]{6})$")  # a temporary file or folder
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Call:
    name: str  # the system call
    index: int  # its number among the main thread's calls of that name, from 1
    kind: str  # the file, generic
    injected: bool = False
    killed: bool = False


@dataclass(frozen=True)
class Point:
    scenario: str
    call: Call
    which: str  # "first" or "last"

    @property
    def label(self) -> str:
        return f"{self.scenario}: {self.call.name} {self.call.kind} ({self.which})"


def generic(path: str, places: dict[str, str]) -> str | None:
    """``path`` with the scenario's folders named (RUN, HOME, EARLIER) and temporary names made generic;
    None for a path outside them (stdout, pipes, the data)."""
    for name, folder in sorted(places.items(), key=lambda item: -len(item[1])):
        if path == folder or path.startswith(folder + "/"):
            path = name + path[len(folder):]
            break
    else:
        return None
    path = re.sub(r"(/\.[^/]*?)\.[A-Za-z0-9_]{8}\.tmp(?=[./]|$)", r"\1.*.tmp", path)  # atomic_write's temporary file or folder
    path = re.sub(r"(/\.[^/]*?)\.[A-Za-z0-9_]{8}\.tmp(?=[./]|$)", r"\1.*.tmp", path)  # one made beside another
    path = re.sub(r"/\.tmp[A-Za-z0-9]{6}$", "/.tmp*", path)  # safetensors' own (Rust tempfile)
    return re.sub(r"/(\.?)[0-9a-f]{32}\.json", r"/\1*.json", path)  # the verified-checksum cache, by path


def parse_trace(text: str, places: dict[str, str]) -> list[Call]:
    """Every traced call on a file of the scenario's, numbered per system call as strace counts them."""
    counts: dict[str, int] = {}
    calls = []
    for line in text.splitlines():
        match = _CALL.match(line.strip())
        if match is None or match["name"] not in SYSCALLS:
            continue
        name = match["name"]
        counts[name] = counts.get(name, 0) + 1
        args = match["args"]
        if name in ("rename", "renameat"):
            strings = _STRING.findall(args)
            path = strings[-1] if strings else ""
        elif name in ("mkdir", "unlink"):
            strings = _STRING.findall(args)
            path = strings[0] if strings else ""
        elif name in ("openat", "unlinkat"):
            if name == "openat" and "O_CREAT" not in args:
                continue  # counted by strace, but no file is made: not a write point
            fd, strings = _FD_PATH.match(args), _STRING.findall(args)
            path = strings[0] if strings else ""
            if path and not path.startswith("/") and fd:
                path = fd["path"] + "/" + path
        else:
            fd = _FD_PATH.match(args)
            path = fd["path"] if fd else ""
        kind = generic(path, places)
        if kind is not None:
            calls.append(Call(name, counts[name], kind, "(INJECTED)" in match["result"], match["result"].strip() == "?"))
    return calls


def points_of(scenario: str, calls: list[Call], last: bool = True) -> list[Point]:
    """First (and last) call of each (system call, file kind), in the order the first ones came."""
    groups: dict[tuple[str, str], list[Call]] = {}
    for call in calls:
        groups.setdefault((call.name, call.kind), []).append(call)
    found = []
    for group in groups.values():
        found.append(Point(scenario, group[0], "first"))
        if last and len(group) > 1:
            found.append(Point(scenario, group[-1], "last"))
    return sorted(found, key=lambda p: calls.index(p.call))


class Harness:
    def __init__(self, work: Path, fork: bool = True):
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.zygote = Zygote(work, self.env(work / "zygote-home")) if fork else None
        self.data = write_data(work / "toy.csv", rows=48)
        self.base = work / "base"
        self.chats = work / "chats.jsonl"
        self.spares: list[tuple[Path, float]] = []
        self.aims: dict[str, dict[tuple[str, str, str], Call]] = {}
        self.decoder = work / "mini-qwen2"
        self.site = work / "site"
        self.trials = 0

    def env(self, home: Path) -> dict[str, str]:
        env = dict(os.environ)
        env["TRAINLAB_HOME"] = str(home)
        env["TRAINLAB_SHARED_CACHE"] = str(home / "cache")  # every write of a run in its home, the plugin verdicts too
        env["PYTHONPATH"] = os.pathsep.join([str(FIXTURES), *filter(None, [os.environ.get("PYTHONPATH")])])
        env.setdefault("OMP_NUM_THREADS", "1")
        env.setdefault("HF_HUB_OFFLINE", "1")
        return env

    def trainlab(self, home: Path, *args: str, strace: list[str] | None = None) -> subprocess.CompletedProcess:
        if self.zygote is not None:
            return self.zygote.run(list(args), self.env(home), strace)
        command = [sys.executable, "-m", "trainlab", *args]
        return subprocess.run([*(strace or []), *command], check=False, capture_output=True, text=True, env=self.env(home), timeout=600)

    def train_args(self, out: Path) -> list[str]:
        return ["train", "toy-classification", "--data", str(self.data), "--out", str(out), *TRAIN, "--json"]

    def textgen_args(self, out: Path) -> list[str]:
        return ["train", "text-generation", "--data", str(self.chats), "--out", str(out), "--set", f"model={self.decoder}",
                *TEXTGEN, *TRAIN, "--json"]  # fmt: skip

    def prepare_textgen(self) -> None:
        """The tiny decoder and the chats, outside the traced folders; the zygote warmed with a thrown-away run."""
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from helpers import make_decoder_folder

        self.decoder = make_decoder_folder(self.work / "mini-qwen2")
        rows = [{"messages": [{"role": "user", "content": f"What is {i} plus one?"}, {"role": "assistant", "content": f"It is {i + 1}."}]}
                for i in range(16)]  # fmt: skip
        self.chats.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        if self.zygote is not None:
            self.zygote.preload_like(self.textgen_args(self.work / "warm-run"), self.env(self.work / "warm-home"))

    # -- the prepared home: an earlier completed run, and a run interrupted after its first checkpoint -----
    # Every run happens in the same folder (``site``), a fresh copy of ``base`` each time: the same paths in
    # every trial, so the copied index is right as it is and the calls repeat to the byte.
    def prepare(self) -> None:
        site = self.site
        home = site / "home"
        done = self.trainlab(home, *self.train_args(site / "earlier"))
        if done.returncode != 0:
            raise SystemExit(f"the earlier run failed: {done.stderr[-2000:]}")
        interrupted = site / "interrupted"
        # killed at the rename after its first checkpoint's: the checkpoint of epoch 1 is kept
        log = self.work / "rename.txt"
        self.trainlab(home, *self.train_args(interrupted), strace=self.strace(log, "rename"))
        places = {"RUN": str(interrupted)}
        first = next(c for c in parse_trace(log.read_text(errors="replace"), places) if c.kind == "RUN/checkpoints/last.safetensors")
        shutil.rmtree(interrupted)
        cut = self.trainlab(home, *self.train_args(interrupted),
                            strace=self.strace(log, "rename", f"rename:signal=KILL:when={first.index + 1}"))  # fmt: skip
        if cut.returncode == 0 or not (interrupted / "checkpoints" / "last.safetensors").is_file():
            raise SystemExit(f"could not interrupt the run to resume: {cut.returncode} {cut.stderr[-2000:]}")
        self.trainlab(home, "runs", "--json")  # the index as it is before each trial: both runs, one interrupted
        shutil.copytree(site, self.base)

    def stage(self, scenario: str) -> tuple[list[str], dict[str, str], Path | None]:
        """A fresh copy of the prepared site for one run of ``scenario``: its command, its folders, its run."""
        site = self.site
        shutil.rmtree(site, ignore_errors=True)
        if scenario == "resume" and self.spares:  # a copy made a while ago, renamed into place: its files keep their inodes and times
            spare, copied = self.spares.pop(0)
            os.rename(spare, site)
        else:
            shutil.copytree(self.base, site)
            copied = time.monotonic()
        home, earlier, interrupted = site / "home", site / "earlier", site / "interrupted"
        places = {"HOME": str(home), "EARLIER": str(earlier), "INTERRUPTED": str(interrupted)}
        if scenario in ("train", "textgen"):
            run = site / "run"
            places["RUN"] = str(run)
            return (self.train_args(run) if scenario == "train" else self.textgen_args(run)), places, run
        if scenario == "resume":
            # A file changed in the last 2 s has its checksum verdict not cached (fileio.RACY_SECONDS); the
            # copied checkpoint's change time is now: wait it out, so the run caches its verdict every time.
            time.sleep(max(0.0, copied + 2.5 - time.monotonic()))
            return ["train", "--resume", str(interrupted), "--json"], places, interrupted
        for lost in home.glob("index.sqlite3*"):  # the index scenario: it was lost
            lost.unlink()
        return ["runs", "--json"], places, None

    def make_spares(self, count: int) -> None:
        """``count`` copies of the prepared site made now, for the resume's trials: each trial renames one
        into place instead of waiting out the fresh copy's change time."""
        for number in range(count):
            spare = self.work / "spares" / str(number)
            shutil.copytree(self.base, spare)
            self.spares.append((spare, time.monotonic()))

    def trace(self, scenario: str) -> list[Call]:
        args, places, _ = self.stage(scenario)
        log = self.work / "strace.txt"
        done = self.trainlab(self.site / "home", *args, strace=self.strace(log, ",".join(SYSCALLS)))
        if done.returncode != 0:
            raise SystemExit(f"{scenario}: the untouched run failed: {done.stderr[-2000:]}")
        return parse_trace(log.read_text(errors="replace"), places)

    @staticmethod
    def strace(log: Path, traced: str, inject: str | None = None) -> list[str]:
        command = ["strace", "-qq", "-y", "-s", "0", "-e", "signal=none", "-o", str(log), "-e", f"trace={traced}"]
        return command + (["-e", f"inject={inject}"] if inject else [])

    # -- one trial ----------------------------------------------------------------------------------------
    def aim(self, point: Point) -> Call:
        """``point``'s call as the scenario's latest trace numbers it."""
        return self.aims.get(point.scenario, {}).get((point.call.name, point.call.kind, point.which), point.call)

    def retrace(self, scenario: str) -> None:
        """Number the scenario's calls again.  A file changed in the source tree while the harness runs (a
        colleague's commit) can add calls before the run's (a stale import cache listing a folder again);
        the forks then all make them, so one new trace aims every later trial right."""
        groups: dict[tuple[str, str], list[Call]] = {}
        for call in self.trace(scenario):
            groups.setdefault((call.name, call.kind), []).append(call)
        self.aims[scenario] = {(*key, which): calls[0 if which == "first" else -1] for key, calls in groups.items() for which in ("first", "last")}

    def trial(self, point: Point, error: str) -> dict:
        self.trials += 1
        result = self.tamper(point, error, self.aim(point))
        if result.get("missed"):  # aimed again, once, at the same call as a new trace numbers it
            before = self.aim(point)
            self.retrace(point.scenario)
            if self.aim(point).index != before.index:
                result = self.tamper(point, error, self.aim(point))
                result["aimed_again"] = True
        return result

    def tamper(self, point: Point, error: str, call: Call) -> dict:
        args, places, run = self.stage(point.scenario)
        trial, home = self.site, self.site / "home"
        log = self.work / "strace.txt"
        how = "signal=KILL" if error == "KILL" else f"error={error}"
        done = self.trainlab(home, *args, strace=self.strace(log, call.name, f"{call.name}:{how}:when={call.index}"))
        hit = [c for c in parse_trace(log.read_text(errors="replace"), places) if c.injected or c.killed]
        result: dict = {"point": point.label, "error": error, "exit_code": done.returncode}
        if not hit or hit[0].kind != call.kind:
            result.update(missed=True, hit=hit[0].kind if hit else None)
            return result
        problems = []
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        result["reason"] = lines[-1] if lines else ""
        if error == "KILL":
            if done.returncode not in (-9, 137):
                problems.append(f"not killed (exit {done.returncode})")
        elif done.returncode not in (0, 1, 2):
            problems.append(f"exit {done.returncode}")
        elif "Traceback" in done.stderr:
            problems.append("a traceback on stderr")
        elif done.returncode != 0 and (not lines or len(lines[-1]) > 400):
            problems.append("no one-line reason")
        problems += self.intact(trial, home)
        problems += self.recover(point, args, home, run)
        problems += self.indexed(trial, home, run)
        result["problems"] = problems
        result["survived"] = not problems
        if problems:  # kept for a look (--keep)
            shutil.copytree(trial, self.work / f"failed-{self.trials:04d}", symlinks=True)
        return result

    def intact(self, trial: Path, home: Path) -> list[str]:
        from trainlab.api.errors import UsageError
        from trainlab.runfolder.index import RunDir
        from trainlab.system.fileio import verify_safetensors

        problems = []
        for folder in (p for p in trial.iterdir() if p.is_dir() and p.name != "home"):
            if (folder / "run.json").exists():
                try:
                    RunDir(folder).read_record()
                except UsageError as exc:
                    problems.append(f"run.json unreadable: {exc}")
            for path in folder.rglob("*.json"):
                if any(_TEMPORARY.match(part) for part in path.relative_to(folder).parts[:-1]):
                    continue  # inside a temporary folder (an export not renamed into place): nothing claims it whole
                try:
                    json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError) as exc:
                    problems.append(f"{path.relative_to(trial)} does not parse: {exc}")
            for path in folder.rglob("*.safetensors"):
                try:
                    verify_safetensors(path)
                except UsageError as exc:
                    problems.append(str(exc))
        index = home / "index.sqlite3"
        if index.exists():
            try:
                with sqlite3.connect(index) as db:
                    verdict = db.execute("PRAGMA integrity_check").fetchone()[0]
                if verdict != "ok":
                    problems.append(f"index damaged: {verdict}")
            except sqlite3.Error as exc:
                problems.append(f"index unreadable: {exc}")
        return problems

    def recover(self, point: Point, args: list[str], home: Path, run: Path | None) -> list[str]:
        if run is None:  # the index scenario: the listing again
            again = self.trainlab(home, *args)
            return [] if again.returncode == 0 else [f"runs fails again: {again.stderr.strip()[-300:]}"]
        status = _status(run)
        if status == "completed":
            return []
        again = self.trainlab(home, *(args if status is None else ["train", "--resume", str(run), "--json"]))
        lines = again.stdout.strip().splitlines()
        data = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
        if again.returncode == 0 and data.get("status") == "completed":
            return []
        how = "restart" if status is None else f"resume (run.json said {status})"
        return [f"{how} fails: exit {again.returncode}: {(data.get('error') or again.stderr.strip())[-300:]}"]

    def indexed(self, trial: Path, home: Path, run: Path | None) -> list[str]:
        listing = self.trainlab(home, "runs", "--json")
        if listing.returncode != 0:
            return [f"runs fails: {listing.stderr.strip()[-300:]}"]
        rows = {r["run_dir"]: r["status"] for r in json.loads(listing.stdout.strip().splitlines()[-1]).get("runs", [])}
        problems = []
        for folder in (p for p in trial.iterdir() if p.is_dir() and p.name != "home"):
            status = _status(folder)
            if status is not None and rows.get(str(folder.resolve())) != status:
                problems.append(f"index says {rows.get(str(folder.resolve()))} for {folder.name}, its run.json {status}")
        if run is not None:  # the run that ended (or was resumed): nothing of its writing left behind
            left = [p.name for p in run.rglob(".*tmp*")] + [p.name for p in run.glob(".trainlab-reserved-space")]
            if left:
                problems.append(f"left in {run.name}: {', '.join(sorted(left))}")
        return problems


# -- the trials' processes: forks of a process that has imported what the command imports ------------------
# ``python -m trainlab train`` spends most of a toy run importing torch; every trial and every check would
# pay it again.  A zygote imports, once, every module a first run of the command imported, and each run is
# a fork of it that runs ``trainlab``'s ``__main__`` as the interpreter would (the exit code, an uncaught
# exception's traceback, the exit handlers), in its own process with its own stdout and stderr.  Imports
# write nothing in a run folder or the home, so a forked run makes the same calls there as a fresh one.
# A traced run stops itself before it begins; strace attaches to it (``-p``, its main thread only, as
# before), and only then is it let go: the calls strace counts are the run's, from its first.


def serve() -> None:
    """The zygote's loop: a JSON request a line on stdin, a JSON answer a line on stdout."""
    import atexit
    import runpy
    import threading
    import traceback

    replies = os.fdopen(os.dup(1), "w", buffering=1)
    for line in sys.stdin:
        ask = json.loads(line)
        if ask["op"] == "preload":
            failed = 0
            for name in ask["modules"]:
                try:
                    __import__(name)
                except BaseException:  # noqa: BLE001 - a module that cannot be imported by name: its importer brings it
                    failed += 1
            replies.write(json.dumps({"threads": threading.active_count(), "failed": failed}) + "\n")
            continue
        if ask["op"] == "wait":
            _, status = os.waitpid(ask["pid"], 0)
            replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid:
            if ask["stop"]:
                os.waitpid(pid, os.WUNTRACED)  # stopped, waiting for strace
            replies.write(json.dumps({"pid": pid}) + "\n")
            continue
        code = 1
        try:
            os.close(replies.fileno())  # the run holds no end of the harness's pipes
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(os.open(ask["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
            os.dup2(os.open(ask["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
            os.environ.clear()
            os.environ.update(ask["env"])
            os.chdir(ask["cwd"])
            sys.argv = ["trainlab", *ask["args"]]
            if ask["stop"]:
                os.kill(os.getpid(), signal.SIGSTOP)
            try:
                runpy.run_module("trainlab", run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if not isinstance(exc.code, (int, type(None))):
                    print(exc.code, file=sys.stderr)
            except BaseException:  # noqa: BLE001 - as the interpreter does: the traceback, exit 1
                traceback.print_exc()
            if ask.get("modules"):
                Path(ask["modules"]).write_text("\n".join(sys.modules), encoding="utf-8")
            threading._shutdown()  # as at the interpreter's exit: non-daemon threads are joined
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class Zygote:
    """The harness's side of ``serve``: ``run`` is ``subprocess.run`` of ``python -m trainlab ARGS``."""

    def __init__(self, work: Path, env: dict[str, str]):
        self.work = work
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env, cwd=work)  # fmt: skip
        self.preloaded: set[str] = set()
        self.threads = 0

    def ask(self, **request) -> dict:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("the write-point zygote ended")
        return json.loads(line)

    def run(self, args: list[str], env: dict[str, str], strace: list[str] | None = None) -> subprocess.CompletedProcess:
        out, err = self.work / "stdout.txt", self.work / "stderr.txt"
        modules = self.work / "modules.txt"
        learn = not self.preloaded
        pid = self.ask(op="run", args=args, env=env, cwd=str(self.work), stdout=str(out), stderr=str(err), stop=bool(strace),
                       modules=str(modules) if learn else "")["pid"]  # fmt: skip
        tracer = None
        if strace:
            tracer = subprocess.Popen([*strace, "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            while _tracer_of(pid) == 0 and tracer.poll() is None:
                time.sleep(0.005)
            os.kill(pid, signal.SIGCONT)
        code = self.ask(op="wait", pid=pid)["returncode"]
        if tracer is not None:
            tracer.wait(timeout=60)
        if learn:
            names = [n for n in modules.read_text(encoding="utf-8").split() if n != "__main__" and not n.endswith(".__main__")]
            self.preloaded.update(names)
            self.threads = self.ask(op="preload", modules=names)["threads"]  # 1: a fork copies no thread's half-held lock
        return subprocess.CompletedProcess(args, code, out.read_text(errors="replace"), err.read_text(errors="replace"))

    def preload_like(self, args: list[str], env: dict[str, str]) -> None:
        """Import what ``args`` imports (a run of it, thrown away), so that its trials fork warm."""
        self.preloaded.clear()
        self.run(args, env)

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def _tracer_of(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return -1
    match = re.search(r"^TracerPid:\s*(\d+)", status, re.MULTILINE)
    return int(match[1]) if match else 0


def errors_of(point: Point, errors: list[str]) -> list[str]:
    """The errors asked for that ``point``'s system call can meet."""
    return [e for e in errors if e in ERRORS_OF.get(point.call.name, DEFAULT_ERRORS)]


def _place(point: Point) -> tuple[str, str, str]:
    """A point's code place and file kind across scenarios: the resumed run is a run like another."""
    return point.call.name, point.call.kind.replace("INTERRUPTED", "RUN"), point.which


def _status(run: Path) -> str | None:
    try:
        return json.loads((run / "run.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError):
        return None


def main() -> int:
    parser = bench_parser(__doc__, "the train scenario's first 3 points, ENOSPC and KILL")
    parser.add_argument("--scenario", default=",".join(SCENARIOS), help="comma-separated: " + ", ".join(SCENARIOS))
    parser.add_argument("--errors", default=",".join(ERRORS), help="comma-separated: " + ", ".join(ERRORS))
    parser.add_argument("--points", type=int, default=0, help="only the first N points of each scenario (0: all)")
    parser.add_argument("--first-only", action="store_true", help="only the first call of each (system call, file kind)")
    parser.add_argument("--only", default="", help="only the points whose label holds this text, or one of several joined by | (\"rename RUN/run.json|renameat\")")
    parser.add_argument("--budget", type=float, default=0, help="start no new point after this many seconds (0: no limit)")
    parser.add_argument("--fresh", action="store_true", help="every run a fresh `python -m trainlab` process, not a fork of a warm one (slower)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (the failed trials' folders)")
    args = parser.parse_args()
    if args.quick:
        args.scenario, args.errors, args.points = "train", "ENOSPC,KILL", 3
    scenarios = [s for s in args.scenario.split(",") if s]
    errors = [e for e in args.errors.split(",") if e]
    if shutil.which("strace") is None:
        raise SystemExit("write_points needs strace (Debian: apt-get install strace)")
    say = speaker(args)
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="trainlab-write-points-"))
    os.environ["TRAINLAB_HOME"] = str(work / "checker-home")  # this process's checks keep their verdict cache here
    os.environ["TRAINLAB_SHARED_CACHE"] = str(work / "checker-home" / "cache")
    results: list[dict] = []
    found: dict[str, int] = {}
    seen: set[tuple[str, str, str]] = set()
    new: dict[str, int] = {}
    left = 0
    harness = None
    prepared = began
    try:
        harness = Harness(work, fork=not args.fresh)
        harness.prepare()
        if "textgen" in scenarios:
            harness.prepare_textgen()
        queues = []
        for scenario in scenarios:
            points = points_of(scenario, harness.trace(scenario), last=not args.first_only)
            found[scenario] = len(points)
            # the resume and the listing share most code places with the train scenario: try only their own
            points = [p for p in points if _place(p) not in seen]
            seen.update(_place(p) for p in points)
            new[scenario] = len(points)
            say(f"{scenario}: {found[scenario]} write points, {len(points)} not met in an earlier scenario")
            queues.append([p for p in points if any(only in p.label for only in args.only.split("|"))][: args.points or None])
        # the scenarios' points in turn, so that a --budget that runs out still samples each of them
        order = [queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)]
        harness.make_spares(sum(len(errors_of(p, errors)) for p in order if p.scenario == "resume"))
        prepared = time.perf_counter()
        for point in order:
            if args.budget and time.perf_counter() - began > args.budget:
                left += 1
                continue
            for error in errors_of(point, errors):
                result = harness.trial(point, error)
                results.append(result)
                verdict = "missed" if result.get("missed") else ("ok" if result["survived"] else "FAIL " + "; ".join(result["problems"]))
                say(f"{point.label:<62} {error:<6} exit {result['exit_code']:>4}  {verdict}")
    finally:
        if harness is not None and harness.zygote is not None:
            harness.zygote.close()
        shutil.rmtree(work / "spares", ignore_errors=True)  # those a --budget left unused
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    tried = [r for r in results if not r.get("missed")]
    survived = [r for r in tried if r["survived"]]
    summary = {
        "command": "python bench/write_points.py " + " ".join(sys.argv[1:]),
        "scenarios": scenarios,
        "points_found": found,
        "points_new": new,
        "points_tried": len({r["point"] for r in tried}),
        "trials": len(tried),
        "survived": len(survived),
        "missed": len(results) - len(tried),
        "aimed_again": sum(1 for r in results if r.get("aimed_again")),
        "points_left_by_the_budget": left,
        "per_error": {e: {"tried": sum(1 for r in tried if r["error"] == e), "survived": sum(1 for r in survived if r["error"] == e)}
                      for e in errors},
        "failures": [{k: r[k] for k in ("point", "error", "exit_code", "reason", "problems")} for r in tried if not r["survived"]],
        "seconds": round(time.perf_counter() - began, 1),
        "seconds_preparing": round(prepared - began, 1),  # the prepared home, the warm process, each scenario's trace
        "seconds_per_trial": round((time.perf_counter() - prepared) / max(1, len(results)), 2),  # with its checks
        "forked": not args.fresh,
        "warm_process_threads": harness.zygote.threads if harness and harness.zygote else None,
    }
    say(f"points tried {summary['points_tried']}, trials {summary['trials']}, survived {summary['survived']}, "
        f"missed {summary['missed']}, left by the budget {left}; {summary['seconds']} s")  # fmt: skip
    emit("write_points", args, summary)
    return 0 if summary["survived"] == summary["trials"] and summary["trials"] else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
        sys.exit(0)
    sys.exit(main())
