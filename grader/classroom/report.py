"""The student's side of the class: which class this workspace joined, and posting each check to its board.

`workshop join` writes `.git/workshop-class.json` (inside .git, so it is never committed); from then on
`workshop check` hands its summary to this file run as a detached script, which posts it
with a 1-second timeout. Grading never waits for the post and never fails because of it: a board
that is down or unreachable costs the check only the start of that process. Only the standard
library is imported here, so a workspace that never joined pays nothing for this module.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the poster process runs this module and needs nothing of the grader
    from grader.grading.grade import Grade

CLASS_FILE = "workshop-class.json"
ID_FILE = "workshop-workspace-id"
TIMEOUT = 1.0
HARD_STOP = 3  # seconds: the poster process ends by then whatever the network does
MAX_CHECKS = 200
_STARTED = time.monotonic()  # this module loads with `workshop check`, so this is about when grading began


def class_file(workspace: Path) -> Path:
    return workspace / ".git" / CLASS_FILE


def joined(workspace: Path) -> dict | None:
    """The class this workspace joined (url, code, name, token, relay), or None."""
    try:
        data = json.loads(class_file(workspace).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    fields = ("url", "code", "name", "token")
    return data if isinstance(data, dict) and all(isinstance(data.get(key), str) for key in fields) else None


def workspace_id(workspace: Path) -> str:
    """This workspace's own random id, made once and kept in .git: a rejoin from here takes back the same seat."""
    path = workspace / ".git" / ID_FILE
    try:
        known = path.read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        known = ""
    if len(known) == 32 and all(char in "0123456789abcdef" for char in known):
        return known
    made = os.urandom(16).hex()
    try:
        path.write_text(made + "\n", encoding="ascii")
    except OSError:  # a read-only .git: this join still works, a later one from here just gets a seat of its own
        pass
    return made


def remember(workspace: Path, data: dict) -> Path:
    path = class_file(workspace)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    path.chmod(0o600)  # the token is the student's key to the relay
    return path


def forget(workspace: Path) -> bool:
    path = class_file(workspace)
    if not path.exists():
        return False
    path.unlink()
    return True


def summary(result: Grade, seconds: float | None = None) -> dict:
    """What the board gets from a Grade: lesson, score, each check's status and time. No messages, no code."""
    checks = []
    for outcome in result.outcomes[:MAX_CHECKS]:
        check = {"id": outcome.check.id, "lesson": outcome.check.lesson, "status": outcome.status}
        took = getattr(outcome, "seconds", None)
        if isinstance(took, (int, float)):
            check["seconds"] = round(min(max(float(took), 0.0), 3600.0), 3)
        checks.append(check)
    report = {"id": os.urandom(16).hex(), "lesson": result.lesson, "passed": result.passed, "score": result.score,
              "max_score": result.max_score, "checks": checks}
    if seconds is not None:
        report["seconds"] = round(min(seconds, 3600.0), 3)
    return report


def share_with_class(result: Grade) -> Posting | None:
    """Post this grade to the class board in the background, if this workspace joined one. Never raises, never waits.

    Returns the posting under way (tests wait on it; `workshop check` does not), or None when nothing is sent.
    """
    try:
        from grader.course.workspace import Workspace

        found = joined(Workspace.find().path)
        if found is None:
            return None
        posting = Posting({"url": found["url"], "code": found["code"], "token": found["token"],
                           "report": summary(result, time.monotonic() - _STARTED)})
        posting.start()
        return posting
    except Exception:  # the class is a bonus: nothing about it may cost the student their grade
        return None


class Posting(threading.Thread):
    """Starts the detached poster off the main thread, so even the fork is done while the check prints its table."""

    def __init__(self, job: dict):
        super().__init__(name="class-board-post")
        self.job, self.poster = job, None

    def run(self) -> None:
        try:
            # This very file as a script, isolated: the poster needs only the standard library, so it neither imports
            # the kit nor anything a `grader/` folder in the student's directory could put first on the path.
            self.poster = subprocess.Popen([sys.executable, "-I", "-S", str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
            self.poster.stdin.write(json.dumps(self.job).encode())  # a few KB: fits the pipe's buffer, so this never blocks
            self.poster.stdin.close()
        except Exception:
            pass

    def wait(self, timeout: float) -> int | None:
        """The poster's exit status (0: the board stored it), or None if it never started."""
        self.join(timeout)
        return self.poster.wait(timeout) if self.poster else None


def post(url: str, code: str, token: str, report: dict, timeout: float = TIMEOUT) -> int | None:
    """POST one report; the HTTP status, or None when the board could not be reached in time."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{url.rstrip('/')}/api/report", data=json.dumps(report).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "X-Class-Code": code, "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code
    except (OSError, ValueError):
        return None


def _main() -> int:
    if hasattr(signal, "alarm"):
        signal.alarm(HARD_STOP)
    job = json.load(sys.stdin)
    status = post(job["url"], job["code"], job["token"], job["report"])
    return 0 if status in (200, 201) else 1


if __name__ == "__main__":
    sys.exit(_main())
