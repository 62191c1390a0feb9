"""The class grade HTML report in a real headless Chromium: the grades come first, on the first screen.

Skipped with the reason when chromium is not on PATH. Screenshots are saved for review: in the test's tmp dir, or
in $REPORT_SCREENSHOT_DIR.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from grader.classroom.class_report import render_html
from tests.class_fixture import made_up_class
from tests.test_board_browser import CHROMIUM, PROJECTOR, WIDE, chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: `apt-get install -y chromium` (Debian)")

MEASURE = """<script>
const rows = [...document.querySelectorAll("table.students tr")].slice(1);
const out = document.createElement("pre");
out.id = "measure";
out.textContent = JSON.stringify({
  height: innerHeight, scrollWidth: document.documentElement.scrollWidth,
  headings: [...document.querySelectorAll("h2")].map(heading => heading.textContent),
  rowBottoms: rows.map(row => row.getBoundingClientRect().bottom),
  tableFont: parseFloat(getComputedStyle(document.querySelector("table.students")).fontSize),
  bodyFont: parseFloat(getComputedStyle(document.body).fontSize),
  cause: document.querySelector("td.cause") ? document.querySelector("td.cause").getBoundingClientRect().bottom : null,
});
document.body.appendChild(out);
</script></body>"""


@pytest.mark.parametrize("size", [PROJECTOR, WIDE], ids=["1366x768", "1920x1080"])
def test_the_class_report_shows_the_grades_first_on_a_projector(tmp_path, size):
    page = tmp_path / "report.html"
    html = render_html(made_up_class(size=16))
    page.write_text(html.replace("</body>", MEASURE), encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", page.as_uri(), size=size)
    shot = Path(os.environ.get("REPORT_SCREENSHOT_DIR", tmp_path)) / f"class-report-{size[0]}x{size[1]}.png"
    (tmp_path / "plain.html").write_text(html, encoding="utf-8")
    chromium(tmp_path, f"--screenshot={shot}", (tmp_path / "plain.html").as_uri(), size=size)
    print(f"\nclass report screenshot: {shot}")
    figures = json.loads(re.search(r'<pre id="measure">(.*?)</pre>', dom).group(1).replace("&quot;", '"'))
    assert figures["headings"][0] == "Students", f"the report opens with {figures['headings'][0]!r}, not the grades"
    assert figures["tableFont"] >= figures["bodyFont"], "the grades are in a smaller font than the rest"
    assert figures["rowBottoms"][9] <= figures["height"], f"the tenth student ends at {figures['rowBottoms'][9]:.0f} px, below the fold"
    assert figures["cause"] is not None and figures["cause"] <= figures["height"], "the broken workspace's cause is on the first screen"
    assert figures["scrollWidth"] <= size[0]
    assert shot.is_file() and shot.stat().st_size > 10_000
