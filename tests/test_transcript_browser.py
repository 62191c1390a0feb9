"""The transcript page in a real headless Chromium, with JavaScript off and on, at projector sizes.

Needs Debian's `chromium`; skipped with the reason when it is not on PATH. Screenshots are saved for review: in
the test's tmp dir, or in the folder $TRANSCRIPT_SCREENSHOTS names.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from grader.transcripts.load import load
from grader.transcripts.page import render
from tests.test_board_browser import CHROMIUM, PROJECTOR, WIDE, chromium
from tests.test_transcript import env_kept, record  # noqa: F401  (env_kept is a fixture)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: `apt-get install -y chromium` (Debian) to run the browser test")


@pytest.fixture
def page(solved_rover, env_kept, tmp_path) -> Path:  # noqa: F811
    run = load(record(solved_rover, 3, tmp_path)[0])
    file = tmp_path / "lesson-3.html"
    file.write_text(render([run]), encoding="utf-8")
    return file


def test_the_page_works_with_javascript_off_and_on(page, tmp_path):
    source = page.read_text(encoding="utf-8")
    links = re.findall(r'<a href="#([^"]+)"><rect ', source)
    assert len(links) > 20 and all(f'id="{target}"' in source for target in links), "every segment is a link to its block"
    # Off: a copy whose Content-Security-Policy forbids every script (Chromium's own switch for that leaves
    # --dump-dom with nothing to dump). The page must read the same, with its links as plain anchors.
    blocked = tmp_path / "no-js.html"
    blocked.write_text(source.replace("<head>", "<head><meta http-equiv=\"Content-Security-Policy\" content=\"script-src 'none'\">", 1))
    off = chromium(tmp_path, "--virtual-time-budget=500", "--dump-dom", blocked.as_uri() + "#r0-m2-b0")
    assert '<html lang="en">' in off and 'b-read flash"' not in off, "no script ran"
    assert "tokens sent per request" in off and "edit call: stash/extract.py" in off and "lines: click to show</summary>" in source
    shot = Path(os.environ.get("TRANSCRIPT_SCREENSHOTS", tmp_path)) / "transcript-no-js.png"
    chromium(tmp_path, "--virtual-time-budget=500", f"--screenshot={shot}", blocked.as_uri(), size=PROJECTOR)  # (headless
    # Chromium draws a blank screenshot of any page opened at a #fragment, so this one opens at the top)
    assert shot.is_file() and shot.stat().st_size > 10_000
    on = chromium(tmp_path, "--virtual-time-budget=500", "--dump-dom", page.as_uri() + "#r0-m2-b0")
    assert '<html lang="en" class="js">' in on
    assert "tokens sent per request" in on and "billed so far" in on and "edit call: stash/extract.py" in on
    assert re.search(r'<article class="block kind-result b-read flash" id="r0-m2-b0">', on), "the block linked to is lit"


def test_screenshots_at_projector_and_wide_sizes(page, tmp_path):
    folder = Path(os.environ.get("TRANSCRIPT_SCREENSHOTS", tmp_path))
    for width, height in (PROJECTOR, WIDE):
        shot = folder / f"transcript-{width}x{height}.png"
        chromium(tmp_path, "--virtual-time-budget=500", f"--screenshot={shot}", page.as_uri(), size=(width, height))
        print(f"\ntranscript screenshot: {shot}")
        assert shot.is_file() and shot.stat().st_size > 10_000
