"""Identical test runs, run once: the `python` the student's side finds first on its PATH.

The grader may name a test command it has the side run over and over on the same files (the grading layer's
scenarios run `python -m pytest -v -p no:cacheprovider` through the student's bash tool, seven times in a lesson-8
check, on four different trees): each run costs about 0.6 CPU seconds of Python and pytest starting, which is not
grading. This `python` is a small shell script. That command (test files may follow it), in a small
working folder of files and folders only (a link or a FIFO would reach where the key cannot see), is keyed on its
arguments, its environment (less what changes from check to check: TMPDIR, PWD, SHLVL), whether its stdout and stderr
are one stream, and every entry's kind, mode, name and content. A key run before in this grading prints that run's
output again (its folder's path changed for this one's) and exits with its status. A run is recorded only if it
ended with a pytest status, its rootdir was its folder (no configuration from above it), it printed under LIMIT
bytes and it left its folder as it found it. A run on the same key under way elsewhere is waited for, WAIT seconds at
most. Anything else, or a machine without GNU find, sha256sum and flock, is the real Python (`exec`); a real run
killed by a signal ends the script by the same signal.

The records live in the run folder (`replay/`), which the side can write: code that forges one could as well print
what it liked itself. They go with the run folder, but a grader process that grades the same workspace again (`watch`
after each save) carries them to its next run (`kept`, then `install`): text, read through the run folder's one
reader, whole records only, RECORDS of them and KEPT bytes read at most. The run folder's path is the same in every
key, so the scenario's tests run for real once a session, not once a save.
"""
from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

PATH = "WORKSHOP_REPLAY"  # the env var naming the folder, which the side's workers put first on their PATH
FOLDER = "replay"  # in the run folder: the script (python) and the records (a key's .out, .err, .cwd, .code)
ENTRIES = 2000  # a working folder with more entries than this is not keyed (a wrong cwd: the workspace, its venv)
KB = 1024  # ... nor one with a file larger than this many KB
LIMIT = 1 << 20  # bytes of output a record holds at most: a larger run is not recorded
WAIT = 3  # seconds a run waits for the same run under way elsewhere, then runs itself (a wait counts on its clock)

SCRIPT = r"""#!/bin/sh
# python, for the side: a test run on the same arguments, environment and files as an earlier one of this grading
# replays that run's output and status (grader/boundary/replay.py says why and when).
real='@REAL@'
runs='@RUNS@'
replayed() {  # `python @COMMAND@ [test files]`, and nothing else
    @MATCH@ || return 1
    shift @COUNT@
    for path; do case "$path" in -*) return 1 ;; esac; done
}
replayed "$@" || exec "$real" "$@"
command -v sha256sum >/dev/null 2>&1 && command -v flock >/dev/null 2>&1 || exec "$real" "$@"
here=$(pwd -P) || exec "$real" "$@"
case "$here" in *[!A-Za-z0-9_./-]*) exec "$real" "$@" ;; esac
# a small tree of files and folders only: a link or a FIFO reaches outside what the key can see
[ "$(find . -printf x 2>/dev/null | head -c @ENTRIES@ | wc -c)" -lt @ENTRIES@ ] || exec "$real" "$@"
[ -z "$(find . \( -type f -size +@KB@k -o ! -type f ! -type d \) -print -quit 2>/dev/null)" ] || exec "$real" "$@"
state() {  # the working folder, whole: every entry's kind, mode and name (one NUL-ended record each), every file's content
    find . -printf '%y %m %p\0' 2>/dev/null | LC_ALL=C sort -z >"$1.list" || return 1
    find . -type f -print0 2>/dev/null | LC_ALL=C sort -z >"$1.files" || return 1
    xargs -0r sha256sum -- <"$1.files" >"$1.sums" 2>/dev/null || return 1
    cat "$1.list" "$1.sums" | sha256sum | cut -c1-64 >"$1.key"
}
scratch="$runs/.$$.$(date +%s%N)"
trap 'rm -f "$scratch".*' EXIT
run=${runs%/*}  # the run folder: its path in the environment is the same for a later run of this process
case "$run" in *[!A-Za-z0-9_./-]*) run=/nowhere ;; esac
{ printf '%s\0' "$@"; env | grep -v -E '^(PWD|OLDPWD|SHLVL|_|TMPDIR|TMP|TEMP|@MARK@)=' | LC_ALL=C sort \
    | sed "s|$(printf '%s' "$run" | sed 's/\./\\./g')/|@RUN@/|g"; } >"$scratch.call" 2>/dev/null || exec "$real" "$@"
state "$scratch.before" || exec "$real" "$@"
one=; [ /dev/stdout -ef /dev/stderr ] && one=merged  # 2>&1: one file (a pipe, say) for both
key=$(printf '%s\n' "$one" | cat - "$scratch.call" "$scratch.before.key" | sha256sum | cut -c1-64)
record="$runs/$key"
replay() {  # $record.code names the run's status and the files that hold it: each written once, before it
    read -r code made <"$record.code" || return 1
    case "$code" in [0-5]) ;; *) return 1 ;; esac
    case "$made" in ''|*[!0-9.]*) return 1 ;; esac
    recorded=$(cat "$record.$made.cwd") || return 1
    case "$recorded" in /*) ;; *) return 1 ;; esac
    case "$recorded" in *[!A-Za-z0-9_./-]*) return 1 ;; esac  # it goes into a sed command: a path of plain characters only
    old=$(printf '%s' "$recorded" | sed 's/\./\\./g')
    sed "s|$old|$here|g" "$record.$made.out" && sed "s|$old|$here|g" "$record.$made.err" >&2 || return 1
    exit "$code"
}
[ -f "$record.code" ] && replay
exec 9>>"$record.lock"
flock -w @WAIT@ 9 && [ -f "$record.code" ] && replay
if [ "$one" ]; then
    { "$real" "$@" 2>&1 9>&-; echo $? >"$scratch.code"; } | tee "$scratch.out"
    : >"$scratch.err"
else
    { "$real" "$@" 2>"$scratch.err" 9>&-; echo $? >"$scratch.code"; } | tee "$scratch.out"
    cat "$scratch.err" >&2
fi
code=$(cat "$scratch.code")
if [ "$code" -gt 128 ] 2>/dev/null; then  # killed by a signal: die of it too, as the real Python did
    trap - EXIT; rm -f "$scratch".*; kill -$((code - 128)) $$; exit "$code"
fi
case "$code" in [0-5]) ;; *) exit "$code" ;; esac  # pytest's own statuses only
grep -qxF "rootdir: $here" "$scratch.out" || exit "$code"  # its rootdir, config included, is this folder
[ "$(cat "$scratch.out" "$scratch.err" | head -c @LIMIT@ | wc -c)" -lt @LIMIT@ ] || exit "$code"
state "$scratch.after" && [ "$(cat "$scratch.before.key")" = "$(cat "$scratch.after.key")" ] || exit "$code"
made="$$.$(date +%s%N)"
printf '%s' "$here" >"$scratch.cwd"
for part in out err cwd; do mv -f "$scratch.$part" "$record.$made.$part"; done
printf '%s %s\n' "$code" "$made" >"$scratch.code" && mv -f "$scratch.code" "$record.code"  # last: it names a whole run
exit "$code"
"""


RECORD = re.compile(r"[0-9a-f]{64}(\.code|\.[0-9]+\.[0-9]+\.(out|err|cwd))")  # a record's files, as the script names them
STATUS = re.compile(r"[0-5] ([0-9]+\.[0-9]+)\n")  # a record's .code, as the script writes it: pytest's status, the run's mark
CWD = re.compile(r"/[A-Za-z0-9_./-]*")  # its .cwd: the script keys only a folder whose path has these characters alone
RECORDS = 32  # records a grader process carries from one run to the next, at most
KEPT = 4 << 20  # bytes it reads to carry them, at most: past that it stops looking


def install(folder: Path, command: tuple[str, ...], records: dict[str, str], mark: str) -> None:
    """Write the script into `folder` (the run folder's replay/, made and the side's to write, before the side starts):
    `python COMMAND [test files]` is replayed, where COMMAND runs pytest (its `rootdir:` line is read); and the
    `records` an earlier run of this grader process kept (`kept`). `mark`: the env var that marks the run, left out of
    the key with the other variables that change from run to run (its folder's path is made the same)."""
    match = " && ".join(f'[ "${n}" = {shlex.quote(word)} ]' for n, word in enumerate(command, 1))
    script = SCRIPT.replace("@REAL@", sys.executable).replace("@RUNS@", str(folder)).replace("@MARK@", mark) \
        .replace("@COMMAND@", " ".join(command)).replace("@MATCH@", match).replace("@COUNT@", str(len(command))) \
        .replace("@WAIT@", str(WAIT)).replace("@ENTRIES@", str(ENTRIES)).replace("@KB@", str(KB)).replace("@LIMIT@", str(LIMIT))
    _new(folder / "python", script, 0o755)
    for name, text in list(records.items())[: 4 * RECORDS]:
        if RECORD.fullmatch(name):
            try:
                _new(folder / name, text, 0o644)
            except (OSError, UnicodeError):  # one the grader cannot write as it was read: the script runs that test again
                continue


def _new(path: Path, text: str, mode: int) -> None:
    """A new file, never one that stood there (O_EXCL), never through a link (O_NOFOLLOW)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(path, mode, follow_symlinks=False)  # whatever the umask took


def kept(run) -> dict[str, str]:
    """The whole records in `run`'s replay folder (their status file and the three it names), read through the run
    folder's one reader: RECORDS of them at most, from the first 2 * RECORDS status files, and no byte read past KEPT.
    Only text in the forms the script writes is carried (a status and a number; an absolute path of plain characters,
    which the script puts in a sed command), and the grader never acts on what it says."""
    names = run.names(FOLDER)
    listed = set(names)
    found: dict[str, str] = {}
    left = KEPT
    for status in sorted(name for name in names if name.endswith(".code") and RECORD.fullmatch(name))[: 2 * RECORDS]:
        if len(found) >= 4 * RECORDS or left <= 0:
            break
        texts = {status: run.read_bytes(run.replay / status, min(64, left))}
        left -= len(texts[status] or b"")
        said = STATUS.fullmatch((texts[status] or b"").decode("ascii", "replace"))
        parts = [f"{status[:-5]}.{said[1]}.{part}" for part in ("out", "err", "cwd")] if said else []
        if not parts or not set(parts) <= listed or not all(RECORD.fullmatch(name) for name in parts):
            continue
        for name in parts:
            texts[name] = run.read_bytes(run.replay / name, min(LIMIT, left)) if left > 0 else None
            left -= len(texts[name] or b"")
        try:
            decoded = {name: data.decode("utf-8") for name, data in texts.items() if data is not None}
        except UnicodeDecodeError:  # not text as written
            continue
        if len(decoded) == 4 and decoded[parts[0]] and CWD.fullmatch(decoded[parts[2]]):
            found.update(decoded)
    return found
