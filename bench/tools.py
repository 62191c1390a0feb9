"""Time and peak memory of the reference tools on large inputs.

    python bench/tools.py [--gigabytes 1]

Each case runs in a fresh Python process (peak RSS is the process's VmHWM, Linux only), against a solved
workspace rendered for the purpose. The baseline line is the same process doing nothing.
"""
from __future__ import annotations

import argparse
import json
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
from rover.tools import execute
name, args, cwd = sys.argv[2], json.loads(Path(sys.argv[3]).read_text()), Path(sys.argv[4])
started = time.perf_counter()
result = execute(name, args, cwd) if name != "baseline" else None
took = time.perf_counter() - started
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({"seconds": took, "peak_mb": peak / 1024,
                  "error": bool(result and result.is_error), "tail": result.text[-110:] if result else ""}))
"""


def case(workspace: Path, cwd: Path, name: str, args: dict) -> dict:
    arguments = cwd / "args.json"
    arguments.write_text(json.dumps(args))
    done = subprocess.run([sys.executable, "-c", PROBE, str(workspace), name, str(arguments), str(cwd)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gigabytes", type=float, default=1.0, help="size of the big file for read")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        workspace = render(len(kit.lessons()) - 1, scratch / "ws", solved=True)
        size = int(options.gigabytes * 1024**3)
        subprocess.run(f"yes 'a log line of text, the same every time, 57 bytes long' | head -c {size} > big.log",
                       shell=True, cwd=scratch, check=True)
        subprocess.run("yes 'x = 1  # filler' | head -n 3000000 > big.py && echo 'TARGET = 1' >> big.py",
                       shell=True, cwd=scratch, check=True)
        cases = [
            ("baseline", "baseline", {}),
            (f"read {options.gigabytes:g} GB file, offset 1", "read", {"path": "big.log"}),
            (f"read {options.gigabytes:g} GB file, last lines", "read", {"path": "big.log", "offset": size // 57 - 5}),
            ("bash: seq 1 10000000 (79 MB of output)", "bash", {"command": "seq 1 10000000"}),
            ("bash: 200 MB in one line", "bash", {"command": "head -c 200000000 /dev/zero | tr '\\0' x"}),
            ("edit: one change in a 51 MB file", "edit", {"path": "big.py", "edits": [{"oldText": "TARGET = 1", "newText": "TARGET = 2"}]}),
            ("write: 50 MB of content", "write", {"path": "out/new.txt", "content": "y" * 50_000_000}),
        ]
        for label, name, args in cases:
            figures = case(workspace, scratch, name, args)
            print(f"{label:42} {figures['seconds']:7.2f} s  peak RSS {figures['peak_mb']:7.1f} MB"
                  + ("  (error!)" if figures["error"] else ""))


if __name__ == "__main__":
    main()
