"""A Gradescope autograder for one lesson: the zip, and the program `run_autograder` starts.

The zip holds `setup.sh` (Python, git, bubblewrap and the kit, from a wheel inside the zip: Gradescope's machine
needs no access to the kit's repository; and an unprivileged user, `student`) and `run_autograder`, which runs
`python -m grader.classroom.autograder` as root: it first writes a zero-score results.json ("the grader did not
finish"), renders a pristine lesson-N workspace, puts the student's `rover/` into it (found wherever it sits in the
submission; nothing else of theirs is used), hands it to the student user, runs `workshop check --json --lesson N`
as that user, ends every process of that user, and only then replaces results.json, built here from the JSON.
The student user can neither read the results folder, the zip's contents nor the kit's solutions, nor write the kit.
`WORKSHOP_AUTOGRADER_ROOT` stands in for /autograder and `WORKSHOP_AUTOGRADER_USER` for `student`.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = "/autograder"
USER = "student"
TIMEOUT = 480.0  # seconds one submission's grading may take: within Gradescope's default limit of 10 minutes
SUBMISSION_LIMIT = 50 * 2**20  # bytes of rover/ code accepted
JUNK = {"__pycache__", ".pytest_cache", ".git"}
COURSE_PARTS = ("copier.yml", "lessons", "rover", "solutions", "stash")  # what a wheel carries under grader/kit/

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the image: Python 3.10+, git, bubblewrap, the kit, and the
# unprivileged user that runs the students' code.
set -euo pipefail
root="${{WORKSHOP_AUTOGRADER_ROOT:-{root}}}"
user="${{WORKSHOP_AUTOGRADER_USER:-{user}}}"
if ! command -v git >/dev/null || ! command -v bwrap >/dev/null \\
    || ! python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  apt-get update -q
  apt-get install -y -q python3 python3-venv python3-pip git bubblewrap
fi
if [ "$(id -u)" -eq 0 ] && ! id -u "$user" >/dev/null 2>&1; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
fi
# The venv's Python must be one the student user can run: not one under a private home (pyenv in /root, mode 700).
# Else the system's python3 (installed if missing), or a refusal that says why. WORKSHOP_AUTOGRADER_PYTHON: another.
runs_for_user() {{ [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null || runuser -u "$user" -- "$@" >/dev/null 2>&1; }}
python3="${{WORKSHOP_AUTOGRADER_PYTHON:-$(command -v python3)}}"
system="${{WORKSHOP_AUTOGRADER_SYSTEM_PYTHON:-/usr/bin/python3}}"
if ! runs_for_user "$python3" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "setup.sh: the user $user cannot run $python3 ($(readlink -f "$python3")): a folder above it is private;" \
       "using $system instead" >&2
  [ -x "$system" ] || {{ apt-get update -q && apt-get install -y -q python3 python3-venv python3-pip; }}
  python3="$system"
  if ! runs_for_user "$python3" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))'; then
    echo "setup.sh: refused: the user $user cannot run $python3 either (or it is not Python 3.10+ with venv);" \
         "install a Python every user can run and name it in WORKSHOP_AUTOGRADER_PYTHON" >&2
    exit 1
  fi
fi
# WORKSHOP_AUTOGRADER_VENV_FLAGS: e.g. --system-site-packages, to reuse installed dependencies (offline tests).
"$python3" -m venv ${{WORKSHOP_AUTOGRADER_VENV_FLAGS:-}} "$root/workshop-venv"
python="$root/workshop-venv/bin/python"
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# WORKSHOP_AUTOGRADER_SITE: more folders of installed packages to reuse, colon-separated (offline tests in a venv).
if [ -n "${{WORKSHOP_AUTOGRADER_SITE:-}}" ]; then
  printf '%s\\n' "$WORKSHOP_AUTOGRADER_SITE" | tr ':' '\\n' > "$site/workshop-offline.pth"
fi
pip=("$python" -m pip install --quiet --disable-pip-version-check)
"${{pip[@]}}" "$root/source/{wheel}"
"${{pip[@]}}" --force-reinstall --no-deps "$root/source/{wheel}"  # this kit, even if another copy is visible
# Root's alone: the zip's contents (the kit's wheel) and the reference solutions inside the installed kit.
chmod -R go-rwx "$root/source" "$site/grader/kit/solutions"
if ! runs_for_user "$python" -I -c 'import grader.cli'; then
  echo "setup.sh: refused: the user $user cannot import the kit with $python (a private folder on its path?)" >&2
  exit 1
fi
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission, as root: grade it as lesson {lesson}, write results/results.json.
root="${{WORKSHOP_AUTOGRADER_ROOT:-{root}}}"
exec "$root/workshop-venv/bin/python" -I -m grader.classroom.autograder --lesson {lesson} --root "$root" \\
  --user "${{WORKSHOP_AUTOGRADER_USER:-{user}}}"{unsafe}
"""


def build(lesson: int, output: Path, unsafe: bool = False) -> Path:
    """The autograder zip for `lesson`: setup.sh, run_autograder and the kit's wheel, at the zip's root. `unsafe`:
    where the student user cannot be used, grade anyway as run_autograder's own user, and say so in every result."""
    with tempfile.TemporaryDirectory(prefix="workshop-autograder-") as scratch:
        wheel = build_wheel(Path(scratch))
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as bundle:
            _add(bundle, "setup.sh", SETUP.format(root=ROOT, user=USER, wheel=wheel.name).encode(), executable=True)
            run = RUN.format(root=ROOT, user=USER, lesson=lesson, unsafe=" --unsafe-no-sandbox" if unsafe else "")
            _add(bundle, "run_autograder", run.encode(), executable=True)
            bundle.write(wheel, wheel.name)
    return output


def _add(bundle: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    bundle.writestr(info, data)


def build_wheel(folder: Path) -> Path:
    """A wheel of the kit as installed here (package and course), written without a build backend or network."""
    from importlib import metadata

    import grader
    from grader.course import kit

    dist = metadata.distribution("workshop-kit")
    package = Path(grader.__file__).resolve().parent
    files = {f"grader/{path.relative_to(package).as_posix()}": path for path in _tree(package)}
    if kit.root() != package / "kit":  # a clone or an editable install keeps the course beside the package
        for part in COURSE_PARTS:
            source = kit.root() / part
            for path in _tree(source) if source.is_dir() else [source]:
                files[f"grader/kit/{path.relative_to(kit.root()).as_posix()}"] = path
    info = f"workshop_kit-{dist.version}.dist-info"
    contents = {name: path.read_bytes() for name, path in sorted(files.items())}
    contents[f"{info}/METADATA"] = (dist.read_text("METADATA") or "").encode()
    contents[f"{info}/entry_points.txt"] = (dist.read_text("entry_points.txt") or "[console_scripts]\nworkshop = grader.cli:run\n").encode()
    contents[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: workshop-kit\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in contents.items()] + [f"{info}/RECORD,,"]
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"workshop_kit-{dist.version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in contents.items():
            _add(out, name, data)
    return wheel


def _tree(folder: Path) -> list[Path]:
    return [path for path in sorted(folder.rglob("*")) if path.is_file() and not path.is_symlink()
            and not JUNK & set(path.relative_to(folder).parts) and path.suffix != ".pyc"]


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def find_rover(submission: Path) -> Path | None:
    """The student's rover/ folder, the shallowest anywhere in the upload (or the upload itself, if it is rover's insides).

    Walked without following links, so a link loop or a link out of the submission leads nowhere.
    """
    def is_rover(folder: Path) -> bool:
        return not folder.is_symlink() and (folder / "tools").is_dir() and (folder / "agent.py").is_file()

    if is_rover(submission):
        return submission
    found = []
    for folder, subfolders, _ in os.walk(submission):
        subfolders[:] = sorted(name for name in subfolders if name not in JUNK)
        found += [Path(folder) / "rover"] if "rover" in subfolders and is_rover(Path(folder) / "rover") else []
    return min(found, key=lambda path: (len(path.parts), str(path)), default=None)


def _size(folder: Path) -> int:
    return sum((Path(here) / name).lstat().st_size for here, _, names in os.walk(folder) for name in names)


def grade_submission(lesson: int, root: Path, user: tuple[int, int] | None, started: float) -> dict:
    """Grade $root/submission as lesson `lesson` (as `user`, when given); the results.json data, built once every
    process of the student's is gone."""
    from grader.classroom import cleanup, student_run
    from grader.course.render import render
    from grader.grading.grade import Grade
    from grader.grading.reports import gradescope_results

    rover = find_rover(root / "submission")
    if rover is None:
        return _zero("No rover/ folder found in the submission (expected rover/agent.py and rover/tools/). "
                     "Upload your workspace's rover folder, or the whole workspace.")
    size = _size(rover)
    if size > SUBMISSION_LIMIT:
        return _zero(f"The rover/ folder holds {size // 2**20} MB; at most {SUBMISSION_LIMIT // 2**20} MB is graded.")
    scratch = Path(tempfile.mkdtemp(prefix="workshop-submission-"))
    token = f"autograder-{os.urandom(6).hex()}"
    try:
        scratch.chmod(0o711)  # the student user may pass through to its own folder, and list nothing
        workspace = render(lesson, scratch / "rendered")
        shutil.rmtree(workspace / "rover")
        shutil.copytree(rover, workspace / "rover", ignore=_unsafe)
        (scratch / "student").mkdir(mode=0o711)
        graded = student_run.grade_student(workspace, lesson, scratch / "student", token, TIMEOUT, None, user)
    except student_run.NotGraded as why:
        graded = why
    finally:
        if user:
            cleanup.end_user(*user)
        cleanup.end_processes(None, token)
        cleanup.remove_tree(scratch)
    if isinstance(graded, student_run.NotGraded):
        return _zero(f"The submission could not be graded: {graded}. Your score is 0; fix that and submit again.")
    return gradescope_results(Grade(lesson, graded.outcomes), time.monotonic() - started)


def _unsafe(folder: str, names: list[str]) -> list[str]:
    """Leave out links (they could point anywhere on the grading machine) and caches."""
    return [name for name in names if name in JUNK or os.path.islink(os.path.join(folder, name))]


def _zero(message: str) -> dict:
    return {"score": 0, "output": message, "output_format": "text", "visibility": "visible", "tests": []}


def publish(results: dict, path: Path) -> None:
    """Write results.json atomically, over anything (a file, a link, a folder) that was there before; every string
    through the one sanitizer (a student's message may hold a lone surrogate or an escape sequence)."""
    from grader.classroom.safe_text import clean_tree

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".results-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(clean_tree(results, limit=1 << 16), out, indent=2)
    _clear(path)
    os.replace(temporary, path)


def _clear(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def student_user(name: str) -> tuple[tuple[int, int] | None, str]:
    """(uid, gid) of the unprivileged user the code runs as, or None and what is missing."""
    import pwd

    if os.geteuid() != 0:
        return None, "run_autograder must run as root to grade as the unprivileged user (Gradescope runs it as root)"
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None, f"no user {name!r} to run student code as: setup.sh creates it (`useradd {name}`), as root"
    if entry.pw_uid == 0:
        return None, f"the user {name!r} is root: student code needs a user of its own"
    return (entry.pw_uid, entry.pw_gid), ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_autograder", description="Grade one Gradescope submission.")
    parser.add_argument("--lesson", type=int, required=True)
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("WORKSHOP_AUTOGRADER_ROOT", ROOT)))
    parser.add_argument("--user", default=os.environ.get("WORKSHOP_AUTOGRADER_USER", USER))
    parser.add_argument("--unsafe-no-sandbox", dest="unsafe", action="store_true")
    args = parser.parse_args(argv)
    started = time.monotonic()
    _import_everything_first()
    results_file = args.root / "results" / "results.json"
    results_file.parent.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        results_file.parent.chmod(0o700)  # root's alone while student code runs
    publish(_zero("The grader did not finish, so this submission has no score yet. Tell your instructor."), results_file)
    user, missing = student_user(args.user)
    if user is None and not args.unsafe:
        publish(_zero(f"Not graded: {missing}."), results_file)
        print(f"run_autograder: {missing}; or build the autograder with `workshop class autograder --unsafe-no-sandbox`",
              file=sys.stderr)
        return 2
    try:
        results = grade_submission(args.lesson, args.root, user, started)
    except Exception as crash:  # the student still gets a page that says what happened, with 0 points
        results = _zero(f"The autograder could not grade this submission ({type(crash).__name__}: {crash}). "
                        f"Tell your instructor.")
    if user is None:
        results["output"] = f"Graded WITHOUT a sandbox (--unsafe-no-sandbox: {missing}).\n\n{results['output']}"
    publish(results, results_file)
    print(f"lesson-{args.lesson}: score {results['score']}; wrote {results_file}")
    return 0


def _import_everything_first() -> None:
    """Every module the grading and the report need, imported before any student code runs."""
    import psutil  # noqa: F401

    import grader.classroom.cleanup  # noqa: F401
    import grader.classroom.safe_text  # noqa: F401
    import grader.classroom.student_run  # noqa: F401
    import grader.course.render  # noqa: F401
    import grader.grading.reports  # noqa: F401


if __name__ == "__main__":
    sys.exit(main())
