"""Evidence from the disk for the file-tool checks (lessons 3-4): varied inputs, diffs, directory events.

Nothing here calls the student's code: it makes the inputs, and reads what the tools left behind.
"""
from __future__ import annotations

import ctypes
import os
import random
import re
import struct

from grader.grading.lab import CheckFailed, excerpt, expect

# Digit-free words, so any number in a tool's answer is one the tool chose to say.
WORDS = ("alpha", "bravo", "cedar", "delta", "ember", "fjord", "grove", "harbor", "iris", "juniper", "kestrel",
         "lumen", "maple", "nectar", "onyx", "prism", "quartz", "raven", "sierra", "tundra", "umber", "violet",
         "willow", "xenon", "yarrow", "zephyr")
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def lines_of(rng: random.Random, count: int) -> list[str]:
    """`count` distinct assignment lines, none with a digit: `alpha_bravo = 'cedar'`."""
    pairs = rng.sample([(a, b) for a in WORDS for b in WORDS if a != b], count)
    return [f"{a}_{b} = {rng.choice(WORDS)!r}" for a, b in pairs]


def count(text: str, piece: str) -> int:
    """Occurrences of `piece`, overlapping ones included."""
    return sum(text.startswith(piece, at) for at in range(len(text)))


def numbers(text: str) -> set[int]:
    """Every number the text states; `4,950` and `4_950` count as 4950 (and as their parts, to be lenient)."""
    found = {int(run) for run in re.findall(r"\d+", text)}
    return found | {int(re.sub(r"[,_]", "", run)) for run in re.findall(r"\d{1,3}(?:[,_]\d{3})+", text)}


def leftovers(files, *expected: str, folder: str = ".") -> list[str]:
    """The names in `folder` of the check's pinned folder `files` (lab.files) other than the expected ones."""
    return [name for name in files.listdir(folder) if name not in expected]


def apply_diff(text: str, original: str) -> str:
    """Apply the unified diff found in a tool's answer to `original`, strictly, and return the result.

    Hunk headers must give the file's own line numbers, every context and removed line must be
    the file's line at that place, and a line without a final newline must be followed by the
    `\\ No newline at end of file` marker. A failure says which diff line disagreed with the file.
    """
    old = re.findall(r"[^\n]*\n|[^\n]+$", original)
    rows = text.split("\n")
    index = next((n for n, row in enumerate(rows) if HUNK.match(row)), None)
    expect(index is not None, f"the answer should carry a unified diff with '@@ -A,B +C,D @@' hunk headers, got {excerpt(text)}")
    out: list[str] = []
    at = 0
    while index < len(rows) and (hunk := HUNK.match(rows[index])):
        old_count, new_count = int(hunk[2] or 1), int(hunk[4] or 1)
        start = int(hunk[1]) - (1 if old_count else 0)
        expect(start >= at, f"hunk {rows[index]!r} starts before the end of the hunk above it")
        out, at, index = out + old[at:start], start, index + 1
        while old_count or new_count:
            expect(index < len(rows), f"the diff ends inside hunk {hunk[0]!r}: it promised more lines")
            row, index = rows[index], index + 1
            line = row[1:] + "\n"
            if index < len(rows) and rows[index].startswith("\\"):
                line, index = row[1:], index + 1
            if row[:1] in (" ", "-"):
                actual = old[at] if at < len(old) else "(past the end of the file)"
                if actual != line and not actual.endswith("\n") and row[1:].startswith(actual):
                    raise CheckFailed(f"the diff line {row!r} is the file's last line, which has no newline: it should be "
                                      "followed by the line '\\ No newline at end of file'")
                expect(actual == line, f"hunk {hunk[0]!r} does not fit the file: its line {row!r} should be the file's "
                                       f"line {at + 1}, which is {actual!r} (hunk headers count lines of the whole file, from 1)")
                at, old_count = at + 1, old_count - 1
            if row[:1] in (" ", "+"):
                out.append(line)
                new_count -= 1
            expect(row[:1] in (" ", "-", "+"), f"inside hunk {hunk[0]!r}, the line {row!r} is not a ' ', '-' or '+' line")
            expect(old_count >= 0 and new_count >= 0, f"hunk {hunk[0]!r} has more lines than its header counts")
    return "".join(out + old[at:])


class DirectoryEvents:
    """The names created and written in one folder while a tool ran (Linux inotify, read from outside the tool).

    `seen` is None where inotify is not available; the checks then skip what only it could show.
    """

    CREATE, MODIFY, MOVED_TO = 0x100, 0x2, 0x80

    def __init__(self, folder):
        self.seen = None
        # lab.files: watched through its pinned fd, so a link planted in its place cannot point the watch elsewhere
        pinned = getattr(folder, "fd_path", None)
        self.folder = pinned if pinned is not None and os.path.isdir(pinned) else getattr(folder, "path", folder)

    def __enter__(self) -> DirectoryEvents:
        try:
            self._libc = ctypes.CDLL(None, use_errno=True)
            self._fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            self._fd = -1
        if self._fd >= 0 and self._libc.inotify_add_watch(self._fd, os.fsencode(self.folder), self.CREATE | self.MODIFY | self.MOVED_TO) < 0:
            os.close(self._fd)
            self._fd = -1
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd < 0:
            return
        self.seen, data = [], b""
        try:
            while chunk := os.read(self._fd, 65536):
                data += chunk
        except BlockingIOError:
            pass
        finally:
            os.close(self._fd)
        at = 0
        while at + 16 <= len(data):
            _, mask, _, size = struct.unpack_from("iIII", data, at)
            self.seen.append((mask, os.fsdecode(data[at + 16:at + 16 + size].rstrip(b"\0"))))
            at += 16 + size

    def check_temp_beside(self, target: str) -> None:
        """The target was put in place from a temp file made in its own folder, not written where it stands."""
        if self.seen is None:
            return
        temps = [name for mask, name in self.seen if mask & self.CREATE and name != target]
        in_place = any(mask & self.MODIFY and name == target for mask, name in self.seen)
        expect(temps, f"no temp file appeared beside {target}: write the temp file in the target's own folder and rename it "
                      "over the target (a temp file from /tmp may sit on another file system, where a rename is not atomic)")
        expect(not in_place, f"{target} was written in place (its bytes changed under its own name): write a temp file beside "
                             "it, then rename the temp file over it")
