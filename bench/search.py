"""Lesson 5's search on a 50,000-file tree, beside raw rg with the same flags: time and peak memory.

    python bench/search.py [--files 50000]

Each figure is the best of several runs, each in a fresh process (peak RSS is VmHWM, Linux only). "raw rg" is
the rg program alone, output to a pipe that is read to the end; "search" is the reference tool
through the registry (Python start-up excluded), which stops reading after limit + 1 matches.
The target: search within 1.2x of raw rg.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.course import kit
from grader.course.render import render

PROBE = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from rover.tools import execute, search
args, cwd, engine = json.loads(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
if engine == "python":
    search.use_rg(None)
started = time.perf_counter()
if engine == "raw":
    import subprocess
    done = subprocess.run([search.RG, *args], cwd=cwd, stdout=subprocess.PIPE)
    lines = done.stdout.count(b"\\n")
else:
    lines = execute("search", args, cwd).text.count("\\n") + 1
took = time.perf_counter() - started
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({"seconds": took, "peak_mb": peak / 1024, "lines": lines}))
"""
FLAGS = ["--null", "--line-number", "--with-filename", "--no-heading", "--color=never", "--sort=path", "--no-require-git",
         "--no-messages"]
WORDS = "alpha beta gamma delta entry feed title link parse date value item html text".split()


def make_tree(root: Path, files: int) -> None:
    rng = random.Random(5)
    for number in range(files):
        folder = root / f"pkg{number // 100:03}" / f"mod{number % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rng.choices(WORDS, k=8)) for _ in range(40)]
        if number % 997 == 0:
            lines[17] = "def needle_function(): return 42"
        (folder / f"file{number % 100:03}.py").write_text("\n".join(lines) + "\n")
    (root / ".gitignore").write_text("pkg499/\n")


def once(workspace: Path, cwd: Path, engine: str, args) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, str(workspace), json.dumps(args), str(cwd), engine],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def side_by_side(workspace: Path, cwd: Path, pattern: str, rounds: int = 7) -> tuple[dict, dict]:
    """Raw rg and the tool, run in turns (so a busy machine slows both alike); the best run of each."""
    raw, tool = [], []
    for _ in range(rounds):
        raw.append(once(workspace, cwd, "raw", [*FLAGS, "-e", pattern]))
        tool.append(once(workspace, cwd, "search", {"pattern": pattern}))
    return tuple(min(runs, key=lambda run: run["seconds"]) | {"peak_mb": max(run["peak_mb"] for run in runs)} for runs in (raw, tool))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        workspace = render(len(kit.lessons()) - 1, scratch / "ws", solved=True)
        tree = scratch / "tree"
        make_tree(tree, options.files)
        print(f"{options.files:,} files (1% of them in a folder .gitignore names); best of 7 runs, raw rg and search in turns\n")
        for label, pattern in (("rare pattern: the whole tree is read", "needle_function"), ("common pattern: limit 100 stops early", "alpha")):
            raw, tool = side_by_side(workspace, tree, pattern)
            fallback = min((once(workspace, tree, "python", {"pattern": pattern}) for _ in range(3)), key=lambda run: run["seconds"])
            print(f"{label} ({raw['lines']:,} matching lines)")
            print(f"  raw rg            {raw['seconds']:7.3f} s  peak RSS {raw['peak_mb']:6.1f} MB")
            print(f"  search (rg)       {tool['seconds']:7.3f} s  peak RSS {tool['peak_mb']:6.1f} MB  {tool['seconds'] / raw['seconds']:.2f}x raw rg")
            print(f"  search (fallback) {fallback['seconds']:7.3f} s  peak RSS {fallback['peak_mb']:6.1f} MB")

if __name__ == "__main__":
    main()
