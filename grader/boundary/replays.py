"""Repeated `python -m pytest` runs of the same tree, replayed within one grading run.

The scenarios of lessons 2-8 run stash's test suite through the student's bash tool: eight runs in a lesson-8
check (three quarters of a CPU second each), five of them on the same unedited copy of stash. The side's PATH now starts with a small `python` of its own (SHIM below): for `python -m pytest ...`
with stdout not a terminal, it hashes everything the run depends on (its arguments, its environment less the
per-check temp folders, every file under its working folder) and, if a run with that hash already finished in this
grading run, prints what that one printed and exits as it did; otherwise it runs the real Python and keeps the
result. A run waits up to 2 s for another run of the same hash to finish (flock), so checks that start together mostly
run the suite once; past that it runs its own (on a busy machine, waiting longer would eat the check's clock).

What is never replayed (the real Python runs, exactly as before): any other command; a tree holding anything but
plain files and folders, or over 2,000 of them, or a `__pycache__` (stale bytecode would make the hash lie); a run that wrote to stderr,
or whose output names its own folder, or ended with an exit status other than pytest's 0, 1 or 5; and every run on
a machine without bash, flock, find and sha256sum (macOS, say).

Nothing here is a door: the results live in the run's own HOME, removed with the run folder, so nothing outlives a
grading run and no classmate's run ever sees another's. The student's code can write there too, and so make its
own bash tool print something the suite never said, which it can do anyway by returning that text.
"""
from __future__ import annotations

import os
import shutil

SHIM = r"""#!/bin/bash
# Written by the grader (grader.boundary.replays): a test run replayed when everything it depends on repeats.
real=@REAL@
store=@STORE@
if [[ "$1 $2" != "-m pytest" || -t 1 ]]; then exec "$real" "$@"; fi
for tool in flock sha256sum find sort env; do command -v "$tool" >/dev/null || exec "$real" "$@"; done
many=$(find . -mindepth 1 -printf x 2>/dev/null | head -c 2001 | wc -c)
(( many <= 2000 )) || exec "$real" "$@"
odd=$(find . -mindepth 1 \( ! -type f ! -type d -o -name __pycache__ \) -print -quit 2>/dev/null) || exec "$real" "$@"
[[ -z "$odd" ]] || exec "$real" "$@"
key=$( { printf '%s\0' "$real" "$@"; printf '\1'
         env -0 | LC_ALL=C grep -zv '^\(TMPDIR\|TEMP\|TMP\|PWD\|OLDPWD\|SHLVL\|_\)=' | LC_ALL=C sort -z; printf '\1'
         find . -mindepth 1 -printf '%y %m %p\0' | LC_ALL=C sort -z; printf '\1'
         find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum; } 2>/dev/null | sha256sum) || exec "$real" "$@"
key=${key%% *}
mkdir -p "$store" 2>/dev/null && exec 9>>"$store/$key.lock" && flock -w 2 9 2>/dev/null || exec "$real" "$@"
if [[ -f "$store/$key.code" ]]; then
    cat "$store/$key.out" && exit "$(<"$store/$key.code")"
fi
out="$store/$key.out.$$" err="$store/$key.err.$$"
"$real" "$@" 9>&- 2>"$err" | tee "$out" 9>&-
code=${PIPESTATUS[0]}
cat "$err" >&2
if [[ ! -s "$err" && ( $code == 0 || $code == 1 || $code == 5 ) ]] && ! grep -qF -- "$PWD" "$out"; then
    mv -f "$out" "$store/$key.out" && echo "$code" > "$store/$key.code"
fi
rm -f "$out" "$err"
exit "$code"
"""


def install(home: str, path: str) -> str:
    """Write the shim into `home` (the run's HOME) for the `python` that `path` finds; the PATH the side should
    have. `path` unchanged if there is no such python, or no bash to run the shim."""
    real, bash = shutil.which("python", path=path), shutil.which("bash", path=path)
    if not (real and bash and home):
        return path
    folder = os.path.join(home, ".workshop", "bin")
    try:
        os.makedirs(folder, exist_ok=True)
        shim = os.path.join(folder, "python")
        text = SHIM.replace("#!/bin/bash", f"#!{bash}", 1).replace("@REAL@", _quoted(real)).replace(
            "@STORE@", _quoted(os.path.join(home, ".workshop", "pytest-runs")))
        with open(shim, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(shim, 0o755)
    except OSError:
        return path
    return folder + os.pathsep + path


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
