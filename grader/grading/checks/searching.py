"""The search checks' bench (lesson 5): trees made for each check, the match lines of an answer, the fault they show
first, and rg programs that stand in for the grader's own to watch what the student's search does with rg.

Nothing here judges alone but `places`: it names the first thing that differs in where the matches are (a `./`
prefix, the order, the files, the line numbers), so that no check blames the cut or the pattern for it.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import string
import sys
from pathlib import Path

from grader.grading.checks import Lab, Result, excerpt, expect, shown

SEARCH = "rover.tools.search"
MATCH = re.compile(r"^(.+?):(\d+): (.*)$")


def token() -> str:
    """A word no file holds by accident, new every run."""
    return "tok" + "".join(random.choices(string.ascii_lowercase, k=8))


def tree(lab: Lab, files: dict[str, str | bytes]) -> None:
    """Files in a git work tree (an empty .git folder is enough for rg to apply .gitignore)."""
    lab.files.mkdir(".git", exist_ok=True)
    for name, content in files.items():
        lab.file(name, content)


def matches(result: Result) -> tuple[list[str], str]:
    """The match lines of a search answer, and every other line of it (the notice, if any), wherever they are."""
    lines = result.text.rstrip("\n").split("\n")
    kept = [line for line in lines if MATCH.match(line)]
    return kept, "\n".join(line for line in lines if line.strip() and not MATCH.match(line)).strip()


def places(kept: list[str], expected: list[str], what: str) -> None:
    """The match lines sit where `expected` says (path:line, in that order); else the first fault, by name."""
    got = [tuple(MATCH.match(line).group(1, 2)) for line in kept]
    want = [tuple(MATCH.match(line).group(1, 2)) for line in expected]
    if got == want:
        return
    expect(not any(path.startswith("./") for path, _ in got),
           f"{what}: paths should read as rg prints them when it is given no path ({want[0][0]!r}), got {got[0][0]!r} "
           f"in {shown(kept[:2], 200)}: leave the path out for '.', and give rg os.path.normpath(path) otherwise")
    expect(sorted(got) != sorted(want), f"{what}: the right lines in another order, {shown([':'.join(p) for p in got], 240)}; "
                                        f"sort them by path, as rg --sort=path does: {shown([':'.join(p) for p in want], 240)}")
    expect(sorted({path for path, _ in got}) == sorted({path for path, _ in want}),
           f"{what}: the matches should be in {shown(sorted({path for path, _ in want}))}, got {shown(sorted({path for path, _ in got}))}")
    expect(False, f"{what}: the matches should be at {shown([':'.join(p) for p in want], 240)} (line numbers count from 1), "
                  f"got {shown([':'.join(p) for p in got], 240)}")


def found(lab: Lab, expected: list[str], **args) -> Result:
    result = lab.ok("search", **args)
    kept, rest = matches(result)
    call = f"search({', '.join(f'{k}={v!r}' for k, v in args.items())})"
    if len(kept) == len(expected):
        places(kept, expected, call)
    expect(kept == expected and not rest, f"{call} should answer exactly {expected}, got {excerpt(result.text)}")
    return result


def grader_rg() -> str | None:
    """The grader's own rg (the kit depends on the ripgrep wheel), found the way the wheel installs it."""
    beside = os.pathsep.join([os.path.dirname(sys.executable), os.path.join(sys.base_prefix, "bin")])
    return shutil.which("rg", path=beside) or shutil.which("rg")


def stand_in(lab: Lab, name: str, body: str) -> Path:
    """An executable `.bin/NAME` in the check's folder: a program to hand the student's search with use_rg."""
    program = lab.file(f".bin/{name}", body)
    lab.files.chmod(program, 0o755)
    return program


def spy_rg(lab: Lab, real: str, marker: str) -> tuple[Path, Path]:
    """An rg that logs its arguments, then runs the real one; when its stdin is a pipe (the caller left its own stdin
    open to it), it hands rg a pipe holding one line with `marker` instead, so that an rg that searches stdin says so
    in its answer (`<stdin>:1: ...`) rather than wait on the pipe forever."""
    log = lab.tmp / ".bin" / "calls.log"
    spy = stand_in(lab, "rg", f"""#!{sys.executable}
import os, stat, sys
with open({str(log)!r}, "w") as out:
    out.write("\\n".join(sys.argv[1:]) + "\\n")
if stat.S_ISFIFO(os.fstat(0).st_mode):
    given, held = os.pipe()
    os.write(held, {(marker + chr(10)).encode()!r})
    os.close(held)
    os.dup2(given, 0)
    os.close(given)
os.execv({real!r}, [{real!r}, *sys.argv[1:]])
""")
    return spy, log


def counting_rg(lab: Lab, real: str) -> tuple[Path, Path]:
    """An rg that hands on the real one's output and writes `complete N` to its log once all N bytes were taken: a
    search that stops at limit + 1 matches and stops rg never lets it, whatever the machine's load (the pipes hold
    some 200 KB; the output is megabytes)."""
    log = lab.tmp / ".bin" / "counted.log"
    counter = stand_in(lab, "rg-counting", f"""#!{sys.executable}
import os, subprocess, sys
rg = subprocess.Popen([{real!r}, *sys.argv[1:]], stdout=subprocess.PIPE)
total = 0
try:
    for chunk in iter(lambda: rg.stdout.read(65536), b""):
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        total += len(chunk)
except BrokenPipeError:
    os._exit(0)  # the reader stopped: as rg does, end quietly
with open({str(log)!r}, "w") as out:
    out.write(f"complete {{total}}\\n")
sys.exit(rg.wait())
""")
    return counter, log


class fallback:
    """Within this block the student's search runs as if rg were missing (their use_rg(None))."""

    def __init__(self, lab: Lab):
        self.lab = lab

    def __enter__(self) -> None:
        self.previous = self.lab.call(SEARCH, "use_rg", None)

    def __exit__(self, *exc: object) -> None:
        self.lab.call(SEARCH, "use_rg", self.previous)


def layout(word: str) -> tuple[dict[str, str], list[str]]:
    """A small tree with matches in three folders, and the answer rg --sort=path gives for it."""
    files = {
        "app.py": f"import os\n\n{word} = 1\nprint({word})\n",
        "pkg/models.py": f"class Feed:\n    {word}: str\n",
        "pkg/sub/notes.txt": f"nothing here\nstill nothing\n  see {word} below\n",
        "zeta.md": "no match in this one\n",
    }
    answer = [f"app.py:3: {word} = 1", f"app.py:4: print({word})", f"pkg/models.py:2:     {word}: str",
              f"pkg/sub/notes.txt:3:   see {word} below"]
    return files, answer
