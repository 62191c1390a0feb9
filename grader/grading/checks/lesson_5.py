"""Lesson 5: search, with ripgrep and with the Python fallback, on trees made for each check."""
from __future__ import annotations

import fnmatch
import random
import re
import string

from grader.boundary.clocks import CheckTimeout
from grader.grading.checks import CheckFailed, Lab, check, excerpt, expect, result_text, shown, tool_results
from grader.grading.checks.searching import (MATCH, SEARCH, counting_rg, fallback, found, grader_rg, layout, matches, places,
                                             spy_rg, token, tree)

NARROW = re.compile(r"path|glob|narrow|pattern|specific|precise", re.I)  # how to narrow a search cut by its limit


@check("search.format")
def format_(lab: Lab) -> None:
    word = token()
    files, answer = layout(word)
    clock = f"time {random.randint(10, 23)}:{random.randint(10, 59)}.txt"  # a file name may contain ':'
    tree(lab, files)
    found(lab, answer, pattern=word)
    tree(lab, {**files, clock: f"{word} at noon\n"})
    for mode in ("with rg", "without rg"):
        if mode == "with rg":
            result = lab.tool("search", pattern=word, path=clock)
        else:
            with fallback(lab):
                result = lab.tool("search", pattern=word, path=clock)
        expect(not result.is_error and result.text.strip() == f"{clock}:1: {word} at noon",
               f"{mode}: a path may contain ':' (the file {clock!r}): search(path={clock!r}) should answer "
               f"'{clock}:1: {word} at noon', got {excerpt(result.text)} (is_error={result.is_error}); the path ends at rg's NUL "
               "(--null), not at the first ':'")
    found(lab, [*answer, f"{clock}:1: {word} at noon"], pattern=word)


@check("search.no-matches")
def no_matches(lab: Lab) -> None:
    tree(lab, {"a.py": "x = 1\n"})
    result = lab.tool("search", pattern=token())
    expect(result.text.strip().startswith("No matches found"),
           f"a search that finds nothing should answer 'No matches found', got {excerpt(result.text)}")
    expect(not result.is_error, "a search that finds nothing answered 'No matches found' as an error (is_error=True): "
                                "finding nothing is an answer, not an error")


@check("search.limit")
def limit(lab: Lab) -> None:
    word, total = token(), random.randint(130, 170)
    tree(lab, {f"logs/part{n}.txt": "".join(f"{word} {n}.{i}\n" for i in range(total // 3 + 1)) for n in range(3)})
    for asked, shown in ((None, 100), (random.randint(5, 9), None)):
        shown = shown or asked
        result = lab.ok("search", pattern=word, **({"limit": asked} if asked else {}))
        kept, notice = matches(result)
        expect(len(kept) == shown, f"with {total}+ matches and limit {shown}, search should show {shown} match lines, got {len(kept)}")
        expect(notice, f"with {total}+ matches and limit {shown}, the answer should end with a notice that the limit cut it; "
                       f"it ends with the last match: {excerpt(result.text[-200:])}")
        expect(result.text.rstrip().endswith(notice.splitlines()[-1]), f"the limit notice should come after the {shown} matches, at the end; "
                                                                       f"the answer begins {excerpt(result.text[:160])}")
        missing = ([f"name the limit ({shown})"] if str(shown) not in notice else []) + \
                  (["say how to narrow the search (a path, a glob, a sharper pattern)"] if not NARROW.search(notice) else [])
        expect(not missing, f"the limit notice should {' and '.join(missing)}, got {excerpt(notice)}")
    tree(lab, {"five.txt": f"{word}\n" * 5})
    found(lab, [f"five.txt:{n}: {word}" for n in range(1, 6)], pattern=word, path="five.txt", limit=5)


@check("search.long-lines")
def long_lines(lab: Lab) -> None:
    word = token()
    line = word + " " + "".join(random.choices(string.ascii_letters + " ", k=random.randint(1500, 2500)))
    wide = word + " " + "".join(random.choices("éàüßΩж€", k=random.randint(900, 1200)))  # 2-3 bytes a character
    exact = word + " " + "".join(random.choices(string.ascii_letters, k=500 - len(word) - 1))  # 500 characters: not cut
    tree(lab, {"min.js": f"{line}\nshort {word}\n", "wide.txt": f"{wide}\n", "zz_exact.txt": f"{exact}\n"})
    for mode in ("with rg", "without rg"):
        if mode == "with rg":
            kept, _ = matches(lab.ok("search", pattern=word))
        else:
            with fallback(lab):
                kept, _ = matches(lab.ok("search", pattern=word))
        expect(len(kept) == 4, f"{mode}: all four lines match, got {shown(kept)}")
        places(kept, [f"min.js:1: {line}", f"min.js:2: short {word}", f"wide.txt:1: {wide}", f"zz_exact.txt:1: {exact}"], mode)
        expect(kept[3] == f"zz_exact.txt:1: {exact}", f"{mode}: a line of exactly 500 characters is not cut, and nothing is added to it; "
                                                      f"got {len(MATCH.match(kept[3])[3])} characters ending {excerpt(kept[3][-60:])}")
        for long, got in ((line, MATCH.match(kept[0])[3]), (wide, MATCH.match(kept[2])[3])):
            expect(got.startswith(long[:500]) and long[500:520] not in got,  # nothing past the 500th character
                   f"{mode}: a {len(long)}-character line should be cut after its first 500 characters (characters, not bytes), "
                   f"got {len(got)} characters: {excerpt(got, 120)}")
            said = got[500:].strip()
            expect(said and len(said) < 200, f"{mode}: a line cut at 500 characters should say that it was cut, right after the kept text; "
                                             f"it ends {excerpt(got[-60:])}")
        expect(kept[1] == f"min.js:2: short {word}", f"{mode}: short lines stay whole, got {excerpt(kept[1])}")


def _leaves_out_the_ignored(lab: Lab, folder: str, other: str, why: str) -> None:
    """A search over `folder` must not show its debug.log, which the folder's .gitignore names; `why` ends the message."""
    lab.file(f"{folder}/.gitignore", "*.log\n")
    lab.file(f"{folder}/app.py", f"{other}\n")
    lab.file(f"{folder}/debug.log", f"{other}\n")
    kept, _ = matches(lab.ok("search", pattern=other, path=folder))
    expect(f"{folder}/debug.log:1: {other}" not in kept,
           f"search(pattern={other!r}, path={folder!r}) shows {folder}/debug.log, which {folder}/.gitignore ignores ('*.log'){why}")


@check("search.gitignore")
def gitignore(lab: Lab) -> None:
    word, other = token(), token()
    lab.file("repo/.git/HEAD", "ref: refs/heads/main\n")  # a git repository: there rg honours a .gitignore with no flag at all
    _leaves_out_the_ignored(lab, "repo", other, ", even in a git repository: the tool turns off rg's own skipping of what a "
                                                ".gitignore names; leave it on")
    _leaves_out_the_ignored(lab, "plain", other, ": the folder is in no git repository, and there rg honours a .gitignore only "
                                                 "when given --no-require-git")  # no .git anywhere: a .gitignore still counts
    found(lab, [f"plain/app.py:1: {other}"], pattern=other, path="plain")
    for n in range(7):  # 700 complaints about bad .gitignore lines on rg's stderr (about 70 KB): more than a pipe holds;
        # the first one quotes a NUL and then `7:`, so a complaint read as output looks like a match line
        lab.file(f"noisy/d{n}/.gitignore", "".join(f"broken{line}[glob\n" for line in range(100)).replace("broken0[", "x\x007:broken["))
    lab.file("noisy/found.txt", f"{other}\n")
    try:
        result = lab.tool("search", pattern=other, path="noisy")
    except CheckTimeout as late:  # the tool waits on rg, and rg on a full stderr pipe nobody reads
        if late.kind != "wait":
            raise
        raise CheckFailed(f"search(pattern={other!r}, path='noisy') never answered: rg wrote 700 complaints about bad .gitignore "
                          "lines (about 70 KB) to its stderr, more than a pipe holds, and waited for someone to read them; "
                          "add --no-messages, or read stderr and stdout at once") from None
    expect("error parsing glob" not in result.text,
           f"rg's complaints about bad .gitignore lines, which rg writes to stderr, came back in the answer: keep stderr apart from "
           f"the matches (stdout), and add --no-messages; got {excerpt(result.text)}")
    expect(matches(result)[0] == [f"noisy/found.txt:1: {other}"],
           f"rg complains on stderr about 700 bad .gitignore lines (--no-messages keeps it quiet); the search should still answer "
           f"'noisy/found.txt:1: {other}', got {excerpt(result.text)}")
    tree(lab, {".gitignore": "*.log\nbuild/\n", "docs/.gitignore": "draft.md\n", "app.py": f"{word}\n",
               "debug.log": f"{word}\n", "build/gen.py": f"{word}\n", "docs/draft.md": f"{word}\n", "docs/guide.md": f"{word}\n"})
    found(lab, [f"app.py:1: {word}", f"docs/guide.md:1: {word}"], pattern=word)


@check("search.binary")
def binary(lab: Lab) -> None:
    word = token()
    tree(lab, {"logo.png": b"\x89PNG\r\n\x1a\n\0\0" + word.encode() + b"\n", "data.bin": word.encode() + b"\0\1\2\n",
               "notes.txt": f"{word} in text\n"})
    found(lab, [f"notes.txt:1: {word} in text"], pattern=word)
    for mode in ("with rg", "without rg"):  # rg searches a binary file named as `path`, and says so in a line with no NUL
        if mode == "with rg":
            result = lab.tool("search", pattern=word, path="data.bin")
        else:
            with fallback(lab):
                result = lab.tool("search", pattern=word, path="data.bin")
        answer = result.text.strip()
        expect(not result.is_error and "\0" not in answer and (answer.startswith("No matches found") or "binary" in answer.lower()),
               f"{mode}: search(path='data.bin'), a binary file, should skip it ('No matches found') or say it is binary, "
               f"never fail or show its bytes; got {excerpt(result.text)} (is_error={result.is_error})")


@check("search.dash-pattern")
def dash_pattern(lab: Lab) -> None:
    tree(lab, {"cli.py": "parser.add_argument('-v')\nparser.add_argument('--verbose')\n"})
    found(lab, ["cli.py:2: parser.add_argument('--verbose')"], pattern="--verbose")
    found(lab, ["cli.py:1: parser.add_argument('-v')", "cli.py:2: parser.add_argument('--verbose')"], pattern="-v")
    lab.file("-notes.txt", "see -v\n")  # a path that starts with '-' is a path, after --
    found(lab, ["-notes.txt:1: see -v"], pattern="see", path="-notes.txt")


@check("search.bad-regex")
def bad_regex(lab: Lab) -> None:
    word = token()
    tree(lab, {"calc.py": f"{word}(1, 2)\n"})
    pattern = f"{word}("
    for mode in ("with rg", "without rg"):
        if mode == "with rg":
            text = lab.error("search", pattern=pattern).text
        else:
            with fallback(lab):
                text = lab.error("search", pattern=pattern).text
        expect(pattern in text and re.search(r"regex|regular expression|pattern", text, re.I),
               f"{mode}: an invalid regex should be refused naming the pattern {pattern!r} and saying it is not a valid regex, got {excerpt(text)}")
        expect("literal" in text, f"{mode}: the refusal of an invalid regex should point at literal=true, got {excerpt(text)}")
    found(lab, [f"calc.py:1: {word}(1, 2)"], pattern=pattern, literal=True)


@check("search.options")
def options(lab: Lab) -> None:
    word = token()
    files, _ = layout(word)
    tree(lab, {**files, "pkg/README.md": f"{word.upper()} is documented here\n"})
    found(lab, [f"pkg/README.md:1: {word.upper()} is documented here", f"pkg/models.py:2:     {word}: str"], pattern=word, path="pkg", glob="*.[mp][dy]",
          ignore_case=True)
    found(lab, [f"pkg/models.py:2:     {word}: str"], pattern=word, path="pkg", glob="*.py")
    found(lab, [f"app.py:3: {word} = 1", f"pkg/models.py:2:     {word}: str"], pattern=f"{word}[ :]", literal=False, glob="*.py")


@check("search.missing-path")
def missing_path(lab: Lab) -> None:
    tree(lab, {"a.py": "x = 1\n"})
    name = f"no_such_{token()}"
    text = lab.error("search", pattern="x", path=name).text
    expect(name in text, f"searching a path that does not exist should be an error naming it ({name}), got {excerpt(text)}")


@check("search.fallback")
def fallback_(lab: Lab) -> None:
    word = token()
    files, answer = layout(word)
    tree(lab, {**files, ".gitignore": "*.log\nbuild/\n", "debug.log": f"{word}\n", "build/gen.py": f"{word}\n",
               "logo.png": b"\x89PNG\0\0" + word.encode() + b"\n", "cli.py": f"parser.add_argument('-{word}')\n" * 3,
               "late.bin": f"{word} line\n".encode() * 300 + b"\0\n",  # a NUL within the first 8 KB, after the matches
               "notes.txt": f"page one\x0c{word} after a form feed\nsep\u2028{word} after a line separator\n"})  # one line each to rg (str.splitlines makes two)
    queries = [{"pattern": word}, {"pattern": f"-{word}"}, {"pattern": word, "limit": 2}, {"pattern": word.upper(), "ignore_case": True, "glob": "*.py"},
               {"pattern": f"{word}(", "literal": True}, {"pattern": f"{word}("}, {"pattern": token()}, {"pattern": word, "path": "pkg"},
               {"pattern": word, "path": "./pkg"}, {"pattern": word, "path": "pkg/"}]
    with_rg = [lab.tool("search", **query) for query in queries]
    with fallback(lab):
        kept, _ = matches(lab.ok("search", pattern=word, path="pkg"))
        expect(kept == answer[2:], f"with no rg, search should still find {answer[2:]}, got {kept}")
        without = [lab.tool("search", **query) for query in queries]
    for query, one, other in zip(queries, with_rg, without):
        if one.is_error and other.is_error:  # the two regex engines word their complaints differently; both must complain
            continue
        expect(one == other, f"search({shown(query)}) answers differently with rg and without it (the fallback): {differ(one, other, query)}")


SKIPPED = re.compile(r"^(debug\.log|build/|logo\.png|late\.bin)")  # what search.fallback's tree holds that both engines skip


def departs(result, query: dict) -> str | None:
    """How a search answer in search.fallback's tree departs from the text, if it visibly does."""
    kept, _ = matches(result)
    places_ = [(m[1], int(m[2])) for m in map(MATCH.match, kept)]
    if query.get("glob") and any(not fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], query["glob"]) for path, _ in places_):
        return f"it shows a file that glob={query['glob']!r} leaves out"
    if any(path.startswith("./") for path, _ in places_):
        return "its paths start with './'"
    if any(SKIPPED.match(path) for path, _ in places_):
        return "it shows a file that is ignored (.gitignore) or binary"
    if places_ != sorted(places_, key=lambda place: (place[0].split("/"), place[1])):
        return "its matches are not sorted by path (rg --sort=path)"
    return None


def differ(one, other, query: dict) -> str:
    """The first line where two answers differ, and which engine departs from the text (rg's sorted answer is the reference)."""
    if one.is_error != other.is_error:
        return (f"with rg it {'is an error' if one.is_error else 'is no error'}, without it {'is' if other.is_error else 'is not'}: "
                f"with rg {excerpt(one.text, 160)}, without {excerpt(other.text, 160)}")
    a, b = one.text.rstrip("\n").split("\n"), other.text.rstrip("\n").split("\n")
    n = next((i for i in range(max(len(a), len(b))) if (a[i:i + 1] or [None]) != (b[i:i + 1] or [None])), 0)
    line = lambda lines: excerpt(lines[n], 160) if n < len(lines) else "(the answer has ended)"  # noqa: E731
    blame = [(name, why) for name, why in (("rg", departs(one, query)), ("fallback", departs(other, query))) if why]
    who = (f"; the {blame[0][0]} engine departs from the text: {blame[0][1]}" if len(blame) == 1 else
           "; compare each engine's answer with rg --sort=path's and the text: both must give it")
    return f"line {n + 1} is {line(a)} with rg and {line(b)} without it{who}"


@check("search.uses-rg")
def uses_rg(lab: Lab) -> None:
    real = grader_rg()
    expect(real, "the grader needs the rg program of the ripgrep wheel to run this check (pip install 'ripgrep>=14.1,<15')")
    word = token()
    spy, log = spy_rg(lab, real, f"-{word} read from stdin")
    tree(lab, {"flags.txt": f"-{word}\n"})
    previous = lab.call(SEARCH, "use_rg", str(spy))
    try:  # the worker's stdin an open pipe, as an agent's is under a runner: rg given no path searches a pipe
        result = lab.tool("search", open_stdin=True, pattern=word)  # a pattern starting with '-' is search.dash-pattern's
    finally:
        lab.call(SEARCH, "use_rg", previous)
    expect(lab.files.is_file(log), "when rg is there (use_rg names it), search should run it; the rg given was never started")
    kept, _ = matches(result)
    expect("<stdin>" not in result.text, f"rg searched its standard input, not the working directory: given no path, rg reads stdin "
                                         f"whenever it is a pipe; start it with stdin=subprocess.DEVNULL. It answered {excerpt(result.text)}")
    if kept:
        places(kept, [f"flags.txt:1: -{word}"], "through rg")
    expect(kept == [f"flags.txt:1: -{word}"], f"through the rg that use_rg names, search(pattern={word!r}) should answer "
                                              f"'flags.txt:1: -{word}', got {excerpt(result.text)}")


@check("search.bounded")
def bounded(lab: Lab) -> None:
    word = token()
    body = "".join(f"{word} line {i}\n" for i in range(500))
    tree(lab, {f"big/f{n:03}.txt": body for n in range(200)})  # 100,000 matching lines, about 3.5 MB
    for mode in ("with rg", "without rg"):
        if mode == "with rg":
            try:
                result, peak = lab.measure("search", pattern=word)
            except CheckTimeout as late:  # the tool waits on rg, and rg on a full stdout pipe
                if late.kind != "wait":
                    raise
                raise CheckFailed(f"with rg: search(pattern={word!r}) over 100,000 matching lines (about 3.5 MB) never answered: rg "
                                  "fills the stdout pipe, then waits for it to be read; read stdout line by line as rg writes it, "
                                  "before anything that waits for rg to end (process.wait(), reading stderr)") from None
        else:
            with fallback(lab):
                result, peak = lab.measure("search", pattern=word)
        kept, notice = matches(result)
        expect(len(kept) == 100 and notice, f"{mode}: 100,000 matches should show the first 100 and the limit notice, got {len(kept)} lines")
        expect(peak < 3_000_000, f"{mode}: searching 100,000 matches took {peak / 1e6:.1f} MB; stop reading after limit + 1 matches "
                                 "instead of collecting them all (about 3.5 MB of text)")
    counter, log = counting_rg(lab, grader_rg())
    previous = lab.call(SEARCH, "use_rg", str(counter))
    try:
        kept, _ = matches(lab.ok("search", pattern=word))
    finally:
        lab.call(SEARCH, "use_rg", previous)
    expect(len(kept) == 100, f"through an rg that counts what is read, 100,000 matches should still show the first 100, got {len(kept)}")
    read = lab.files.read_text(log).split()[-1] if lab.files.is_file(log) else None
    expect(read is None, f"with rg: search read all of rg's output ({read} bytes) to show 100 matches; stop reading after limit + 1 "
                         "matches and stop rg (kill it): the rest could be gigabytes")


@check("search.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(5)
    results = [result_text(block) for block in tool_results(run.messages)]
    expect(any(line.startswith("stash/feeds.py:25: ") and "strip_html" in line for text in results for line in text.splitlines()),
           "searching for strip_html should answer 'stash/feeds.py:25: ...' (path:line: text)")
    feeds = lab.files.read_text(run.cwd / "stash/feeds.py")
    expect("extract.plain_text(" in feeds and "strip_html" not in feeds, "after the scenario, feeds.py should call extract.plain_text")
    expect("2 passed" in results[-1], f"stash's suite should end at '2 passed', got {excerpt(results[-1][-200:])}")
