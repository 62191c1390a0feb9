"""The reference write tool, called directly."""
from __future__ import annotations


def test_write_reports_created_then_replaced(solved_rover, tmp_path):
    first = solved_rover.execute("write", {"path": "a/b.txt", "content": "é"}, tmp_path)
    second = solved_rover.execute("write", {"path": "a/b.txt", "content": "ee"}, tmp_path)
    assert first.text == "Created a/b.txt: wrote 2 bytes."
    assert second.text == "Replaced a/b.txt: wrote 2 bytes."


def test_write_needs_content(solved_rover, tmp_path):
    result = solved_rover.execute("write", {"path": "a.txt"}, tmp_path)
    assert result.is_error and "missing required content" in result.text
    assert not (tmp_path / "a.txt").exists()


def test_the_prompt_steers_write_to_new_files(solved_rover):
    from rover.prompt import system_prompt

    prompt = system_prompt(list(solved_rover.TOOLS))
    assert "write only to create new files" in prompt and "edit" in prompt
    assert "write" not in system_prompt(["ls", "read"])
