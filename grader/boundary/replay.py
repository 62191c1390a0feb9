"""Identical test runs, run once: the `python` the student's side finds first on its PATH.

Scenarios run stash's tests through the student's bash tool (`python -m pytest ...`), seven times in a lesson-8
check, on three different trees: each run costs about 0.6 CPU seconds of Python and pytest starting, which is not
grading. This `python` is a small shell script: for `python -m pytest ...` it keys the run on its arguments, its
environment (less what changes from check to check: TMPDIR, PWD, SHLVL) and every file, folder and link under the
working folder (names, modes, targets, contents), if it is small (a wrong working folder may be a venv). A key run before in this grading, to the end, with a pytest exit
status, and leaving its folder as it found it, prints that run's output again (its folder's path changed for this
one's) and exits with its status. A run on the same key under way elsewhere is waited for, three seconds at most. Anything
else, or a machine without the tools it needs (GNU find, sha256sum, flock), is the real Python (`exec`).

The records live in the run folder (`replay/`), which the side can write: code that forges one could as well print
what it liked itself. They go with the run folder.
"""
from __future__ import annotations

import sys
from pathlib import Path

PATH = "WORKSHOP_REPLAY"  # the env var naming the folder, which the side's workers put first on their PATH
FOLDER = "replay"  # in the run folder: the script (python) and the records (a key's .out, .err, .cwd, .code)
ENTRIES = 2000  # a working folder with more entries than this is not keyed (a wrong cwd: the workspace, its venv)
KB = 1024  # ... nor one with a file larger than this many KB
WAIT = 3  # seconds a run waits for the same run under way elsewhere, then runs itself (a wait counts on its clock)

SCRIPT = r"""#!/bin/sh
# python for the grader's scenarios: a `python -m pytest ...` run on the same arguments, environment and files as an
# earlier one of this grading replays its output and status (grader/boundary/replay.py says why and when).
real='@REAL@'
runs='@RUNS@'
[ "$1" = -m ] && [ "$2" = pytest ] || exec "$real" "$@"
command -v sha256sum >/dev/null 2>&1 && command -v flock >/dev/null 2>&1 || exec "$real" "$@"
here=$(pwd -P) || exec "$real" "$@"
case "$here" in *[!A-Za-z0-9_./-]*) exec "$real" "$@" ;; esac
[ "$(find . -printf x 2>/dev/null | head -c @ENTRIES@ | wc -c)" -lt @ENTRIES@ ] || exec "$real" "$@"  # a small tree only
[ -z "$(find . -type f -size +@KB@k -print -quit 2>/dev/null)" ] || exec "$real" "$@"
state() {  # the working folder, whole: every entry's kind, mode, name and link target, every file's content
    find . -printf '%y %m %p\0%l\0' >"$1.list" 2>/dev/null || return 1
    find . -type f -print0 2>/dev/null | LC_ALL=C sort -z >"$1.files" || return 1
    xargs -0r sha256sum -- <"$1.files" >"$1.sums" 2>/dev/null || return 1
    LC_ALL=C sort -z "$1.list" | sha256sum | cut -c1-64 >"$1.key" || return 1
    sha256sum <"$1.sums" | cut -c1-64 >>"$1.key"
}
scratch="$runs/.$$"
trap 'rm -f "$scratch".*' EXIT
{ printf '%s\0' "$@"; env | grep -v -E '^(PWD|OLDPWD|SHLVL|_|TMPDIR|TMP|TEMP)=' | LC_ALL=C sort; } >"$scratch.call" 2>/dev/null || exec "$real" "$@"
state "$scratch.before" || exec "$real" "$@"
key=$(cat "$scratch.call" "$scratch.before.key" | sha256sum | cut -c1-64)
record="$runs/$key"
replay() {
    recorded=$(cat "$record.cwd") || return 1
    code=$(cat "$record.code") || return 1
    if [ "$recorded" = "$here" ]; then
        cat "$record.out" && cat "$record.err" >&2
    else
        old=$(printf '%s' "$recorded" | sed 's/\./\\./g')
        sed "s|$old|$here|g" "$record.out" && sed "s|$old|$here|g" "$record.err" >&2
    fi || return 1
    exit "$code"
}
[ -f "$record.code" ] && replay
exec 9>>"$record.lock"
flock -w @WAIT@ 9 && [ -f "$record.code" ] && replay
{ "$real" "$@" 2>"$scratch.err" 9>&-; echo $? >"$scratch.code"; } | tee "$scratch.out"
code=$(cat "$scratch.code")
cat "$scratch.err" >&2
case "$code" in [0-5]) ;; *) exit "$code" ;; esac
state "$scratch.after" && [ "$(cat "$scratch.before.key")" = "$(cat "$scratch.after.key")" ] || exit "$code"
printf '%s' "$here" >"$scratch.cwd"
for part in out err cwd; do mv -f "$scratch.$part" "$record.$part"; done
mv -f "$scratch.code" "$record.code"  # last: a record with a status is whole
exit "$code"
"""


def install(folder: Path) -> None:
    """Write the script into `folder` (the run folder's replay/, made and the side's to write, before the side starts)."""
    script = folder / "python"
    script.write_text(SCRIPT.replace("@REAL@", sys.executable).replace("@RUNS@", str(folder))
                      .replace("@WAIT@", str(WAIT)).replace("@ENTRIES@", str(ENTRIES)).replace("@KB@", str(KB)), encoding="utf-8")
    script.chmod(0o755)
    return folder
