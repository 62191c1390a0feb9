"""The kit's own test run prints one line per file: no stray letters, and xdist's start-up line once."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_a_skip_prints_no_stray_letter_and_the_workers_come_up_in_one_line(tmp_path):
    (tmp_path / "test_one.py").write_text("import pytest\n\ndef test_a():\n    pass\n\n@pytest.mark.skip(reason='x')\ndef test_b():\n    pass\n")
    (tmp_path / "test_two.py").write_text("def test_c():\n    pass\n")
    (tmp_path / "none.ini").write_text("[pytest]\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-c", str(tmp_path / "none.ini"), "--rootdir", str(tmp_path), "-p", "tests.progress",
                           "-p", "no:cacheprovider", "-q", "-n", "2", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines.count("bringing up nodes...") <= 1, lines
    assert not [line for line in lines if line.startswith(("s", "s[", ".")) and not line.startswith("skipped")], lines
    assert any(line.endswith("test_one.py: 1 passed, 1 skipped (0 s)") for line in lines), lines
