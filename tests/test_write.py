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


def test_a_new_file_gets_the_umask_mode_and_an_old_one_keeps_its_own(solved_rover, tmp_path):
    import os

    previous = os.umask(0o027)
    try:
        solved_rover.execute("write", {"path": "new.sh", "content": "echo\n"}, tmp_path)
    finally:
        os.umask(previous)
    assert (tmp_path / "new.sh").stat().st_mode & 0o777 == 0o640
    (tmp_path / "new.sh").chmod(0o751)
    solved_rover.execute("write", {"path": "new.sh", "content": "echo 2\n"}, tmp_path)
    assert (tmp_path / "new.sh").stat().st_mode & 0o777 == 0o751


def test_a_symlink_is_written_through(solved_rover, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real/file.txt").write_text("old\n")
    (tmp_path / "link.txt").symlink_to("real/file.txt")
    assert not solved_rover.execute("write", {"path": "link.txt", "content": "new\n"}, tmp_path).is_error
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real/file.txt").read_text() == "new\n"


def test_a_read_only_file_is_refused_and_left_alone(solved_rover, tmp_path):
    (tmp_path / "locked.txt").write_text("keep\n")
    (tmp_path / "locked.txt").chmod(0o444)
    result = solved_rover.execute("write", {"path": "locked.txt", "content": "gone\n"}, tmp_path)
    assert result.is_error and "read-only" in result.text
    assert (tmp_path / "locked.txt").read_text() == "keep\n" and sorted(p.name for p in tmp_path.iterdir()) == ["locked.txt"]


def test_empty_content_is_an_empty_file(solved_rover, tmp_path):
    result = solved_rover.execute("write", {"path": "pkg/__init__.py", "content": ""}, tmp_path)
    assert result.text == "Created pkg/__init__.py: wrote 0 bytes."
    assert (tmp_path / "pkg/__init__.py").read_bytes() == b""


def test_the_temp_file_is_made_beside_the_target(solved_rover, tmp_path):
    from grader.grading.checks.disk import DirectoryEvents

    with DirectoryEvents(tmp_path) as events:
        solved_rover.execute("write", {"path": "a.txt", "content": "x"}, tmp_path)
    events.check_temp_beside("a.txt")
    assert events.seen is None or any(name.startswith(".a.txt.") for _, name in events.seen)


def test_the_graders_watch_sees_a_temp_file_renamed_in_from_elsewhere(tmp_path):
    import os

    import pytest

    from grader.grading.checks.disk import DirectoryEvents
    from grader.grading.lab import CheckFailed

    (tmp_path / "target").mkdir()
    (tmp_path / "elsewhere.tmp").write_text("new")
    with DirectoryEvents(tmp_path / "target") as events:
        os.replace(tmp_path / "elsewhere.tmp", tmp_path / "target/a.txt")
    if events.seen is None:
        pytest.skip("no inotify here")
    with pytest.raises(CheckFailed, match="no temp file appeared beside a.txt"):
        events.check_temp_beside("a.txt")
    with DirectoryEvents(tmp_path / "target") as events:
        (tmp_path / "target/a.txt").write_text("in place")
    with pytest.raises(CheckFailed):
        events.check_temp_beside("a.txt")
