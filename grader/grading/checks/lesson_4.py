"""Lesson 4: write, on names and contents made fresh for each run, and a loop that never writes from a cut-off reply."""
from __future__ import annotations

import random

from grader.grading.checks import Lab, check, excerpt, expect, result_text, tool_results
from grader.grading.checks.disk import WORDS, DirectoryEvents, leftovers, numbers
from grader.grading.checks.lesson_3 import DIRECTORY_WORD

ACCENTED = ("é", "ü", "ñ", "ø", "☕", "€", "—", "日本", "🚀", "ß")


def text_of(rng: random.Random, lines: int) -> str:
    return "".join(" ".join(rng.sample(WORDS, 4)) + "\n" for _ in range(lines))


def name_of(rng: random.Random, suffix: str = ".md") -> str:
    return rng.choice(WORDS) + "_" + rng.choice(WORDS) + suffix


def mode_of(lab: Lab, name: str) -> int:
    return lab.files.stat(name).st_mode & 0o7777


@check("write.create")
def create(lab: Lab) -> None:
    rng = random.Random()
    name, content = name_of(rng), text_of(rng, rng.randint(1, 9))
    result = lab.ok("write", path=name, content=content)
    found = lab.files.read_bytes(name)
    expect(found == content.encode(), f"the file should hold exactly the content sent: expected {excerpt(content)}, found {excerpt(found)}")
    expect(name in result.text, f"the result should name the path written ({name}), got {excerpt(result.text)}")


@check("write.parents")
def parents(lab: Lab) -> None:
    rng = random.Random()
    path = "/".join(rng.sample(WORDS, rng.randint(1, 3))) + "/test_new.py"
    result = lab.tool("write", path=path, content="def test_it():\n    pass\n")
    expect(not result.is_error, f"{path}: its folder {path.rsplit('/', 1)[0]}/ does not exist yet, and write should create the missing "
                                f"folders and then the file; it returned an error: {excerpt(result.text)}")
    expect(lab.files.is_file(path), f"missing parent folders ({path.rsplit('/', 1)[0]}/) should be created")


@check("write.utf8-bytes")
def utf8_bytes(lab: Lab) -> None:
    rng = random.Random()
    content = " ".join(rng.choice(WORDS) + rng.choice(ACCENTED) for _ in range(rng.randint(2, 12))) + "\n"
    size, length = len(content.encode("utf-8")), len(content)
    name = name_of(rng, ".txt")
    text = lab.ok("write", path=name, content=content).text
    found = lab.files.read_bytes(name)
    expect(found == content.encode("utf-8"), f"the file should be written as UTF-8: expected {content.encode()!r}, found {found!r}")
    said = numbers(text)
    expect(size in said or length not in said, f"the result should count UTF-8 bytes ({size}), not characters ({length}): it says {excerpt(text)}")
    expect(size in said, f"the result should give the path and the number of bytes written ({size}); it says {excerpt(text)}")
    content = "".join(rng.choice(WORDS) + rng.choice(ACCENTED) + "\n" for _ in range(rng.randint(150, 700)))  # past 1 KiB
    size = len(content.encode("utf-8"))
    said = numbers(lab.ok("write", path=name, content=content).text)
    expect(size in said, f"a bigger file needs its exact size too: expected {size} bytes (or {size:,}), "
                         f"the numbers it gives are {sorted(said) or 'none'}")


@check("write.exact")
def exact(lab: Lab) -> None:
    rng = random.Random()
    cases = {"raw.txt": text_of(rng, 2).rstrip("\n"), "crlf.txt": text_of(rng, 3).replace("\n", "\r\n"),
             "mixed.txt": "one\r\ntwo\nthree\r\n", "blank.txt": "\n\n" + text_of(rng, 1) + "\n\n"}
    for name, content in cases.items():
        lab.ok("write", path=name, content=content)
        found = lab.files.read_bytes(name)
        expect(found == content.encode(), f"write should add and change nothing (no newline of its own, line endings as sent): "
                                          f"expected {content.encode()!r}, found {found!r}")


@check("write.empty")
def empty(lab: Lab) -> None:
    rng = random.Random()
    path = f"{rng.choice(WORDS)}/__init__.py"
    text = lab.ok("write", path=path, content="").text
    expect(lab.files.is_file(path) and lab.files.read_bytes(path) == b"", f"empty content should make an empty file at {path}")
    expect(0 in numbers(text), f"the result should say 0 bytes were written, got {excerpt(text)}")
    lab.file("notes.md", text_of(rng, 3))
    lab.ok("write", path="notes.md", content="")
    expect(lab.files.read_bytes("notes.md") == b"", "writing empty content over a file should leave it empty")


@check("write.overwrite")
def overwrite(lab: Lab) -> None:
    rng = random.Random()
    name, old = name_of(rng, ".py"), text_of(rng, rng.randint(4, 9))
    new = old.split("\n", 1)[0] + "\n"
    lab.file(name, old)
    lab.ok("write", path=name, content=new)
    after = lab.files.read_text(name)
    expect(after == new, f"writing shorter content should replace the file completely: expected {excerpt(new)}, found {excerpt(after)}")


@check("write.atomic")
def atomic(lab: Lab) -> None:
    rng = random.Random()
    name = name_of(rng, ".json")
    lab.file(name, '{"old": true}\n')
    inode = lab.files.stat(name).st_ino
    with DirectoryEvents(lab.files) as replaced:
        lab.ok("write", path=name, content='{"new": true}\n')
    expect(lab.files.read_text(name) == '{"new": true}\n', "the new content should be in place")
    expect(lab.files.stat(name).st_ino != inode, "the file kept its inode, so it was rewritten in place: write a temp file and rename it over "
                                        "the target (write_atomic), so a crash never leaves half a file")
    fresh = name_of(rng, ".toml")
    with DirectoryEvents(lab.files) as created:
        lab.ok("write", path=fresh, content="[tool]\n")
    extra = leftovers(lab.files, name, fresh)
    expect(not extra, f"no temporary files should be left behind, found {extra}")
    replaced.check_temp_beside(name)
    created.check_temp_beside(fresh)


@check("write.mode")
def mode(lab: Lab) -> None:
    rng = random.Random()
    masks = rng.sample([0o022, 0o027, 0o037, 0o002, 0o007], 2)  # two, so no fixed mode fits both; never 077 (0600)
    for number, umask in enumerate(masks):
        name = f"{rng.choice(WORDS)}{'_x' * number}.sh"
        previous = lab.call("os", "umask", umask)  # where the tool runs
        try:
            lab.ok("write", path=name, content="echo hi\n")
        finally:
            lab.call("os", "umask", previous)
        expected = 0o666 & ~umask
        expect(mode_of(lab, name) == expected, f"with umask {umask:03o} a new file should get mode {expected:o} (0666 & ~umask), "
                                               f"as any program's new file does; found {mode_of(lab, name):o}")
    kept = rng.choice([mode for mode in (0o755, 0o750, 0o700, 0o640, 0o600, 0o664) if mode != expected])
    lab.files.chmod(name, kept)
    lab.ok("write", path=name, content="echo bye\n")
    expect(mode_of(lab, name) == kept, f"an existing file should keep its mode {kept:o} when rewritten, found {mode_of(lab, name):o}")


@check("write.read-only")
def read_only(lab: Lab) -> None:
    rng = random.Random()
    name, content = name_of(rng, ".cfg"), text_of(rng, 3)
    lab.ok("write", path=name, content=content)
    left = leftovers(lab.files, name)  # a leak of the plain write that made the file, not of the refusal below
    expect(not left, f"the plain write of {name} (before any read-only file) left {left} behind: a temp file is renamed over the "
                     "target or removed, never left")
    kept = rng.choice([0o444, 0o440, 0o400, 0o555])
    lab.files.chmod(name, kept)
    try:
        result = lab.tool("write", path=name, content="replaced\n")
        expect(result.is_error, f"{name} is read-only (mode {kept:o}, no write bit): write should refuse it, as write_atomic does "
                                f"(a rename would replace it: the folder allows that); it succeeded with {excerpt(result.text)}")
        found = lab.files.read_bytes(name)
        expect(found == content.encode(), f"a read-only file (mode {kept:o}) must not be replaced: expected {excerpt(content)}, found {excerpt(found)}")
        expect(mode_of(lab, name) == kept, f"a read-only file keeps its mode {kept:o}, found {mode_of(lab, name):o}")
        extra = leftovers(lab.files, name)
        expect(not extra, f"a refused write should leave nothing behind, found {extra}")
    finally:
        if lab.files.is_file(name):
            lab.files.chmod(name, 0o644)


@check("write.symlink")
def symlink(lab: Lab) -> None:
    rng = random.Random()
    folder, name, link = rng.sample(WORDS, 3)
    lab.file(f"{folder}/{name}.txt", "old\n")
    lab.files.symlink(f"{folder}/{name}.txt", link)
    content = text_of(rng, 2)
    lab.ok("write", path=link, content=content)
    expect(lab.files.is_symlink(link), f"{link} is a symlink to {folder}/{name}.txt: write through it, leave the link a link")
    found = lab.files.read_text(f"{folder}/{name}.txt")
    expect(found == content, f"the symlink's target {folder}/{name}.txt should get the content: expected {excerpt(content)}, found {excerpt(found)}")
    extra = leftovers(lab.files, f"{name}.txt", folder=folder)
    expect(not extra, f"no temporary files should be left behind, found {extra}")


@check("write.directory")
def directory(lab: Lab) -> None:
    rng = random.Random()
    folder = rng.choice(WORDS)
    lab.files.mkdir(folder)
    lab.file(f"{folder}/keep.txt", "kept\n")
    text = lab.error("write", path=folder, content="x").text
    expect(folder in text and DIRECTORY_WORD.search(text) and "Errno" not in text,
           f"{folder} is a directory: the refusal should name it and say it is a directory (or folder), in words of its own "
           f"rather than a raw OS error; got {excerpt(text)}")
    expect(lab.files.read_text(f"{folder}/keep.txt") == "kept\n", "the directory and its files must be left alone")


def use(call_id: str, name: str, **args) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def turn(*blocks: dict, stop: str = "tool_use") -> dict:
    return {"content": list(blocks), "stop_reason": stop}


@check("write.cut-off-turn")
def cut_off_turn(lab: Lab) -> None:
    rng = random.Random()
    names = [f"{word}.py" for word in rng.sample(WORDS, rng.randint(2, 4))]
    calls = [use(f"toolu_cut{n}", "write", path=name, content="print('whole')\n") for n, name in enumerate(names[:-1])]
    calls.append(use(f"toolu_cut{len(names) - 1}", "write", path=names[-1], content="def main():\n    print('hel"))
    resent = name_of(rng, ".txt")
    run = lab.run_agent([turn({"type": "text", "text": "Writing them all"}, *calls, stop="max_tokens"),
                         turn(use("toolu_whole", "write", path=resent, content="print('hello')\n")),
                         turn({"type": "text", "text": "Done."}, stop="end_turn")], "Write the programs.")
    ran = [name for name in names if lab.files.exists(name)]
    expect(not ran, "no tool call from a reply cut off at max_tokens may run, not even the complete ones before the cut; "
                    f"these were written: {ran}")
    expect(lab.files.is_file(resent), "the smaller write the model sent next should run")
    answered = {block.get("tool_use_id"): block.get("is_error") for block in tool_results(run.messages)}
    missing = [call["id"] for call in calls if answered.get(call["id"]) is not True]
    expect(not missing, f"every call of the cut-off reply needs an is_error tool_result with its id; not so for {missing}")


@check("write.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(4)
    created = run.cwd / "tests/test_plain_text.py"
    expect(lab.files.is_file(created), "the scenario should create stash's tests/test_plain_text.py")
    results = [result_text(block) for block in tool_results(run.messages)]
    size = len(lab.files.read_bytes(created))
    expect(size in numbers(results[0]), f"write should report the {size} bytes written, got {excerpt(results[0])}")
    expect("1 passed" in results[-1], f"the new test should pass, got {excerpt(results[-1][-200:])}")
