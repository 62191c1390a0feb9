"""The reference search tool, called directly: with rg, without it, and the two side by side."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from grader.cli import main


@pytest.fixture
def engines(solved_rover):
    """run(args, cwd, rg=True) -> (text, is_error) of the solved search, with rg or with the fallback."""
    from rover.tools import search

    found = search.RG
    assert found, "the kit depends on the ripgrep wheel, so rg must be found"

    def run(args: dict, cwd, rg: bool = True) -> tuple[str, bool]:
        previous = search.use_rg(found if rg else None)
        try:
            result = solved_rover.execute("search", args, cwd)
        finally:
            search.use_rg(previous)
        return result.text, result.is_error

    return run


def make(root, files: dict[str, str]) -> None:
    (root / ".git").mkdir()
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)


def test_the_fallback_knows_nested_gitignores_negation_and_anchors(engines, tmp_path):
    make(tmp_path, {
        ".gitignore": "*.log\n!keep.log\n/top.txt\nbuild/\n",
        "src/.gitignore": "gen_*.py\n",
        "keep.log": "hit\n", "drop.log": "hit\n", "top.txt": "hit\n", "src/top.txt": "hit\n",
        "src/gen_a.py": "hit\n", "src/real.py": "hit\n", "build/x.py": "hit\n", "src/build/y.py": "hit\n",
        ".hidden/h.py": "hit\n", "a.txt": "hit\n", "a/b.txt": "hit\n",
    })
    with_rg = engines({"pattern": "hit"}, tmp_path)
    assert with_rg == ("a/b.txt:1: hit\na.txt:1: hit\nkeep.log:1: hit\nsrc/real.py:1: hit\nsrc/top.txt:1: hit", False)
    assert engines({"pattern": "hit"}, tmp_path, rg=False) == with_rg
    for args in ({"pattern": "hit", "path": "src"}, {"pattern": "hit", "glob": "*.log"}, {"pattern": "HIT", "ignore_case": True, "limit": 3}):
        assert engines(args, tmp_path, rg=False) == engines(args, tmp_path), args


def test_an_explicit_file_is_searched_even_when_ignored(engines, tmp_path):
    make(tmp_path, {".gitignore": "*.log\n", "app.log": "error: disk full\n"})
    assert engines({"pattern": "disk", "path": "app.log"}, tmp_path) == ("app.log:1: error: disk full", False)
    assert engines({"pattern": "disk", "path": "app.log"}, tmp_path, rg=False) == ("app.log:1: error: disk full", False)


def test_crlf_and_undecodable_bytes_come_back_readable(engines, tmp_path):
    (tmp_path / "win.txt").write_bytes(b"one\r\nfind me\r\n\xff\xfe find me too\n")
    expected = ("win.txt:2: find me\nwin.txt:3: \ufffd\ufffd find me too", False)
    assert engines({"pattern": "find"}, tmp_path) == expected == engines({"pattern": "find"}, tmp_path, rg=False)


def test_a_bad_regex_says_how_to_search_for_the_text(engines, tmp_path):
    (tmp_path / "a.py").write_text("f(x)\n")
    for rg in (True, False):
        text, failed = engines({"pattern": "f("}, tmp_path, rg)
        assert failed and "'f('" in text and "literal=true" in text


def test_the_description_quotes_the_limits(solved_rover):
    from rover.tools import search

    assert "100" in search.DESCRIPTION and "500" in search.DESCRIPTION


def test_start_lesson_5_gives_the_search_stub_and_the_walker(tmp_path):
    assert CliRunner().invoke(main, ["start", "lesson-5", str(tmp_path / "ws")]).exit_code == 0
    assert "NotImplementedError" in (tmp_path / "ws/rover/tools/search.py").read_text()
    assert (tmp_path / "ws/rover/tools/walk.py").is_file() and (tmp_path / "ws/scenarios/lesson-5.json").is_file()
    assert not (tmp_path / "ws/rover/gate.py").exists()
