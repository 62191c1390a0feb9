"""Door 1 of issue 25: the student's side is never the host's root and reaches none of the grader's keyrings; and
the hostile suite's attacks on it hold whoever grades, root (as CI runs) or an ordinary user (as a student does)."""
from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import grader
from tests.conftest import FIXTURES
from tests.test_sandbox import NOTHING_LEFT, PRELUDE, grade_hostile, header, run_in_side


ROOTLESS = PRELUDE + """
uid = os.getresuid()[0]
for line in open("/proc/self/uid_map"):
    inside, outside, count = map(int, line.split())
    if inside <= uid < inside + count:
        out["host_uid"] = outside + uid - inside
attempt("core_pattern", lambda: open("/proc/sys/kernel/core_pattern", "r+"))
attempt("sysctl", lambda: open("/proc/sys/vm/drop_caches", "w"))
attempt("sysrq", lambda: open("/proc/sysrq-trigger", "w"))
for name in ("/etc/shadow", "/etc/shadow-", "/etc/gshadow-"):
    attempt(name, lambda: out.setdefault(name + " holds", open(name).read()))
keyctl = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
out["keyctl"] = "ok" if libc.syscall(keyctl, 0, ctypes.c_long(-3), 0) >= 0 else os.strerror(ctypes.get_errno())
open(sys.argv[1], "w").write(json.dumps(out))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap is Linux's boundary")
def test_the_side_is_never_the_hosts_root_and_reaches_no_keyring(tmp_path):
    """Issue 25, door 1: a root grader's side was the host's uid 0 (core_pattern writable: the kernel ran the student's
    script as real root; /etc/shadow- readable), and keyctl read the instructor's session keyring. Then it was the
    host's nobody, whom daemons (and every other root grader's side) run as: now a uid of this grader's own."""
    from grader.boundary.backends.identity import side_id

    out, _ = run_in_side(tmp_path, ROOTLESS)
    assert out["host_uid"] != 0 and out["host_uid"] == (side_id() if os.geteuid() == 0 else os.geteuid()), out
    assert out["core_pattern"] in ("Permission denied", "Read-only file system"), out
    assert out["sysctl"] == "Read-only file system" and out["sysrq"] != "ok", out
    assert not [name for name in out if name.endswith(" holds") and "root:" in out[name]], "masked, or out of reach"
    assert out["keyctl"] == "Operation not permitted"


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="a root grader on Linux hands the run folder to its side's uid")
def test_a_root_graders_run_folder_is_no_other_users(tmp_path):
    """The replay shim's attack helper: a root grader handed the run folder to the host's nobody, so any process
    running as nobody (a daemon, another root grader's side) could enter it and rewrite what this side runs. The
    side's host uid is the grader's own now: nobody is refused, and so is every other user."""
    from grader.boundary.backends.identity import side_id

    def look(folder):
        owner = os.stat(folder.path).st_uid
        probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-I", "-c",
                                "import os, sys; open(os.path.join(sys.argv[1], 'home', 'planted'), 'w')", str(folder.path)],
                               capture_output=True, text=True)
        return owner, probe.returncode, probe.stderr.strip().splitlines()[-1:]

    _, (owner, code, said) = run_in_side(tmp_path, "import sys; open(sys.argv[1], 'w').write('{}')", look)
    assert owner == side_id() and owner not in (0, 65534)
    assert code != 0 and "PermissionError" in said[0], said


def test_the_sides_uid_is_no_one_elses(tmp_path, monkeypatch):
    """Drawn where no passwd or group entry is, and outside the ranges /etc/subuid and /etc/subgid hand to users'
    own namespaces (the uid attack helper: rootless podman's or LXD's ids were not looked at)."""
    from grader.boundary.backends import identity
    from grader.errors import WorkshopError

    low, high = identity.SIDE_IDS[0], identity.SIDE_IDS[0] + 20  # a range of 20, so that draws land in its gap
    monkeypatch.setattr(identity, "SIDE_IDS", (low, high))
    (tmp_path / "subuid").write_text(f"alice:{low}:10\nbroken line\n")
    (tmp_path / "subgid").write_text(f"bob:{high - 5}:5\n")
    monkeypatch.setattr(identity, "SUBORDINATE", (str(tmp_path / "subuid"), str(tmp_path / "subgid")))
    for _ in range(5):
        identity.side_id.cache_clear()
        assert low + 10 <= identity.side_id() < high - 5
    (tmp_path / "subgid").write_text(f"bob:{low + 10}:10\n")  # every id taken: one clear error, not an endless draw
    identity.side_id.cache_clear()
    with pytest.raises(WorkshopError, match="no unused uid"):
        identity.side_id()
    if identity.grader_is_root():  # a run folder begun for a side with no uid is removed again
        from grader.boundary.runfolder import RunFolder

        monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
        with pytest.raises(WorkshopError):
            RunFolder()
        assert not [path for path in tmp_path.iterdir() if path.name.startswith("workshop-check-")]
    identity.side_id.cache_clear()


def test_every_start_holds_a_fresh_session_keyring_of_its_own():
    """The side is started from a thread that joined a new session keyring: nothing of the grader's is in it."""
    import ctypes

    from grader.boundary.backends.identity import in_fresh_keyring

    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
    session = lambda: libc.syscall(keyctl, 0, ctypes.c_long(-3), 1)  # KEYCTL_GET_KEYRING_ID of @s, made if missing
    ours = session()
    if ours < 0:
        pytest.skip(f"keyrings are refused here: {os.strerror(ctypes.get_errno())}")
    first, second = in_fresh_keyring(session), in_fresh_keyring(session)
    assert len({ours, first, second}) == 3 and min(first, second) > 0
    assert session() == ours, "the grader's own thread keeps its keyring"
    with pytest.raises(ZeroDivisionError):
        in_fresh_keyring(lambda: 1 / 0)


ORDINARY = 65534  # nobody: an ordinary user the suite can become when it runs as root
AS_USER = ["core_pattern", "shadow_backup", "session_keyring", "read_secrets", "write_outside"]


class OrdinaryUser:
    """A folder of ORDINARY's, with a copy of the kit and an interpreter it can run (the suite's venv, its python
    and the checkout may sit in root-only folders), and the command prefix that becomes ORDINARY."""

    def __init__(self, folder: Path):
        self.folder = folder
        kit = folder / "kit"  # the checkout (its lessons and solutions too), without its history and tests
        shutil.copytree(Path(grader.__file__).parent.parent, kit, ignore=shutil.ignore_patterns(".git", "__pycache__", "tests", "bench"))
        python = self._python()
        venv = folder / "venv"
        subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
        site = next(venv.glob("lib/python*/site-packages"))
        paths = {str(kit), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
        (site / "suite.pth").write_text("\n".join(sorted(paths)) + "\n")
        self.command = ["setpriv", f"--reuid={ORDINARY}", f"--regid={ORDINARY}", "--clear-groups", "--", str(venv / "bin" / "python")]
        self.own(folder)
        tried = subprocess.run([*self.command, "-c", "import grader.cli, psutil, click"], capture_output=True, text=True, cwd=folder)
        if tried.returncode != 0:
            pytest.skip(f"uid {ORDINARY} cannot run the kit here ({(tried.stderr.strip().splitlines() or ['?'])[-1]}): "
                        "the venv's site-packages must be readable by others (.ci/run makes it so)")

    @staticmethod
    def _python() -> str:
        """An interpreter of this version that others can run: this one, or the system's (pyenv's lie in /root)."""
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        for candidate in (os.path.realpath(sys.executable), f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
            probe = subprocess.run(["setpriv", f"--reuid={ORDINARY}", f"--regid={ORDINARY}", "--clear-groups", "--", candidate, "-c",
                                    f"import os; os.stat({candidate!r})"], capture_output=True)  # its own path: reachable
            if probe.returncode == 0:
                return candidate
        pytest.skip(f"no {version} that uid {ORDINARY} can run")

    def workspace(self, source: Path) -> Path:
        target = self.folder / "ws"
        shutil.copytree(source, target)
        self.own(target)
        return target

    def own(self, *paths: Path) -> None:
        for top in paths:
            for path in [top, *(top.rglob("*") if top.is_dir() else [])]:
                os.chown(path, ORDINARY, ORDINARY, follow_symlinks=False)


@pytest.fixture
def ordinary_user():
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("runs as root to become an ordinary user (the suite itself runs as one otherwise)")
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is missing")
    folder = Path(tempfile.mkdtemp(prefix="workshop-as-user-", dir="/tmp"))  # not pytest's temp: its parents are 0700
    folder.chmod(0o755)
    try:
        yield OrdinaryUser(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("name", AS_USER)
def test_the_attacks_on_the_sides_identity_hold_for_an_ordinary_user_too(workspace, tmp_path, ordinary_user, name):
    """CI runs the suite as root; a student grades as an ordinary user, whose side bwrap maps to that user."""
    fixture = FIXTURES / "hostile" / f"{name}.py"
    done, took, left, results = grade_hostile(workspace, tmp_path, fixture, user=ordinary_user)
    assert done.returncode == 1 and done.stdout, done.stderr.decode()[-2000:]
    report = json.loads(done.stdout)
    assert report["sandbox"] == "bwrap"
    patterns = header(fixture, "fails").split()
    named = [entry for entry in report["checks"] if any(fnmatch.fnmatch(entry["id"], pattern) for pattern in patterns)]
    assert named and not [entry["id"] for entry in named if entry["status"] == "passed"]
    assert left == NOTHING_LEFT
