"""Lesson 2: bash, run for real in a fresh directory, with output, limits and clocks checked.

The notices are SPEC's fixed formats, found at the end of the output in any order and whatever
separates them from the text; the kept output is judged without them. Sizes, codes and words
vary per run, and every spill file a check is shown is removed again.
"""
from __future__ import annotations

import random
import shlex
import signal
import sys
import time
from pathlib import Path

from grader.grading.checks import CheckFailed, Lab, Result, check, excerpt, expect, result_text, tool_results
from grader.grading.checks.notices import expect_notice_format, expect_spill, parse, tidy

CAP_BYTES = 51_200
WORDS = "alpha bravo cedar delta ember fjord gamma harbor indigo juniper kelp lumen".split()


def shortest_timeout(lab: Lab) -> float:
    """The timeout the clock checks give: 0.5 s, so watch shows the lesson's verdict within a second of a save, or the
    minimum of the student's own schema where that is higher, up to 1 s. The schema is the contract the checks call
    within, and stubs before the floor came down to 0.1 said 1."""
    try:
        tools = lab.schemas()
    except CheckFailed:  # lesson 0's checks say what is wrong with them; a call below says it again if it matters
        return 0.5
    floor = next((tool for tool in tools if tool.get("name") == "bash"), {})
    for key in ("input_schema", "properties", "timeout", "minimum"):  # whatever JSON the student's registry gave
        floor = floor.get(key) if isinstance(floor, dict) else None
    if isinstance(floor, bool) or not isinstance(floor, (int, float)):
        return 0.5
    return min(max(0.5, float(floor)), 1.0)


@check("bash.output")
def output(lab: Lab) -> None:
    rng = random.Random()
    first, last = " ".join(rng.sample(WORDS, 3)), rng.choice(WORDS) + " with no newline at the end"
    text = parse(lab.ok("bash", command=f"echo '{first}'; printf '{last}'")).body
    expect(text == f"{first}\n{last}", f"expected the command's output exactly, {excerpt(first + chr(10) + last)}, got {excerpt(text)}")
    text = lab.ok("bash", command="true").text
    expect(text == "(no output)", f"a command that prints nothing should answer '(no output)', got {excerpt(text)}")


@check("bash.cwd")
def cwd(lab: Lab) -> None:
    made = f"{random.choice(WORDS)}.txt"
    text = lab.ok("bash", command=f"pwd; echo made > {made}").text
    expect(Path(text.strip()).resolve() == lab.tmp.resolve(), f"commands should run in the working directory {lab.tmp}, pwd said {excerpt(text)}")
    expect(lab.files.is_file(made), f"the command wrote {made}: it should land in the working directory {lab.tmp}")


@check("bash.merged")
def merged(lab: Lab) -> None:
    words = random.sample(WORDS, 6)
    streams = "; ".join(f"echo {word}" + (" >&2" if index % 2 else "") for index, word in enumerate(words))
    text = parse(lab.ok("bash", command=streams)).body
    expect(text == "\n".join(words), f"stdout and stderr should arrive merged, in the order written: expected {excerpt(chr(10).join(words))}, got {excerpt(text)}")


@check("bash.exit-code")
def exit_code(lab: Lab) -> None:
    code = random.randint(2, 120)
    result = lab.error("bash", command=f"echo 'collecting...'; echo 'E   boom' >&2; exit {code}")
    output = parse(result)
    expect("collecting..." in output.body and "E   boom" in output.body, f"a failing command's output explains the failure: expected it kept, got {excerpt(result.text)}")
    found = output.find("Command exited")
    expect(found and found.group(1) == str(code), f"expected the result to end with 'Command exited with code {code}', got {excerpt(result.text[-80:])}")


@check("bash.tail-lines")
def tail_lines(lab: Lab) -> None:
    total = random.randint(2500, 6000)
    output = parse(lab.ok("bash", command=f"seq 1 {total}"))
    kept = output.body.split("\n")
    try:
        expect_notice_format(output, "2000-line")
        expect(kept == [str(n) for n in range(total - 1999, total + 1)],
               f"{total} lines of output should be cut to the LAST 2000 ({total - 1999}-{total}), got {len(kept)} lines, {excerpt(kept[0], 20)} to {excerpt(kept[-1], 20)}")
        expect_spill(lab, output, total - 1999, total, "2000-line", "".join(f"{n}\n" for n in range(1, total + 1)).encode())
    finally:
        tidy(output, lab)


@check("bash.tail-bytes")
def tail_bytes(lab: Lab) -> None:
    width = random.choice([63, 99, 130, 170])  # bytes a line, newline included; none divides 51,200: the cap falls mid-line
    keep = CAP_BYTES // width
    output = parse(lab.ok("bash", command=f"for i in $(seq 1 1000); do printf '%0{width - 1}d\\n' $i; done"))
    kept = output.body.split("\n")
    try:
        expect_notice_format(output, "50.0KB")
        broken = next((line for line in kept if len(line) != width - 1), None)
        expect(len(kept) == keep and broken is None,
               f"1000 lines of {width} bytes under a 51,200-byte cap: expected the last {keep} whole lines, got {len(kept)}"
               + (f", one of them {len(broken)} characters long, not {width - 1}: {excerpt(broken, 20)}" if broken is not None else ""))
        expect(kept[0].lstrip("0") == str(1001 - keep) and kept[-1].lstrip("0") == "1000",
               f"the lines kept should be the last ones, {1001 - keep} to 1000; got {excerpt(kept[0].lstrip('0'), 20)} to {excerpt(kept[-1].lstrip('0'), 20)}")
        expect_spill(lab, output, 1001 - keep, 1000, "50.0KB")
    finally:
        tidy(output, lab)
    letter = random.choice(["é", "ж", "€", "語"])  # 2 or 3 bytes each: a cap that counts characters keeps about twice too much
    rows = [f"{n:04d} {letter * 48}" for n in range(1, 1001)]
    keep = CAP_BYTES // len(rows[0].encode() + b"\n")
    output = parse(lab.ok("bash", command=f"for i in $(seq 1 1000); do printf '%04d {letter * 48}\\n' $i; done"))
    kept = output.body.split("\n")
    try:
        expect_notice_format(output, "50.0KB")
        expect(kept == rows[-keep:],
               f"1000 lines of {len(rows[0].encode()) + 1} bytes ({len(rows[0]) + 1} characters: {letter!r} is {len(letter.encode())} bytes in UTF-8): "
               f"the cap counts bytes, so the last {keep} lines fit in 51,200 bytes; got {len(kept)} lines ({len(output.body.encode()):,} bytes)")
        expect_spill(lab, output, 1001 - keep, 1000, "50.0KB")
    finally:
        tidy(output, lab)


@check("bash.utf8-cut")
def utf8_cut(lab: Lab) -> None:
    rng = random.Random()
    letter = rng.choice(["é", "ж", "€", "→", "語", "🙂"])
    width = len(letter.encode())
    count = rng.randint(CAP_BYTES // width + 500, 120_000 // width)
    ending = "z" * rng.choice([j for j in range(1, 4) if (CAP_BYTES - j) % width])  # so the last 51,200 bytes start mid-character
    line = "ab" + letter * count + ending  # one line, no newline: only a cut inside it can keep 50 KB
    output = parse(lab.ok("bash", command=f"printf 'ab'; for i in $(seq 1 {count // 100}); do printf '{letter * 100}'; done; printf '{letter * (count % 100)}{ending}'"))
    tidy(output, lab)
    body = output.body
    size, whole = len(body.encode()), len(line.encode())
    what = f"one {whole:,}-byte line of {letter!r} (starting 'ab', ending {ending!r})"
    expect(line.endswith(body.lstrip("\ufffd")),
           f"{what}: a line longer than 50 KB keeps its END, its last 51,200 bytes at most; got "
           + (f"the whole line ({size:,} bytes)" if size >= whole else
              f"its head ({size:,} bytes from its start)" if body.startswith("ab") else f"{size:,} bytes that are not its end")
           + f": {excerpt(body[:12])} to {excerpt(body[-12:])}")
    expect("\ufffd" not in body, f"{what}: the cut split a {width}-byte UTF-8 character: the kept text starts {excerpt(body[:5])}; "
                                 "skip the continuation bytes (byte & 0xC0 == 0x80) at the start of the cut")
    expect(CAP_BYTES - 3 <= size <= CAP_BYTES,
           f"{what}: expected its last 51,200 bytes, cut at a whole character ({CAP_BYTES - 3:,} to {CAP_BYTES:,} bytes), got {size:,} bytes: {excerpt(body[:20])}")


@check("bash.undecodable")
def undecodable(lab: Lab) -> None:
    word = random.choice(WORDS)
    text = parse(lab.ok("bash", command=f"printf '{word} \\xff\\xfe end\\n'")).body
    expect(text.startswith(f"{word} ") and text.endswith(" end") and ("\ufffd" in text or "\\xff" in text),
           f"bytes that are not UTF-8 come back replaced (U+FFFD), the rest as printed: expected {word!r} + replaced bytes + ' end', got {excerpt(text)}")
    letter = random.choice(["é", "ж", "€", "語", "🙂"])
    raw = letter.encode()
    text = parse(lab.ok("bash", command=_two_writes(f"{word} ".encode() + raw[:1], raw[1:] + b" end\n"))).body
    expect(text == f"{word} {letter} end",
           f"{letter!r} ({len(raw)} bytes in UTF-8) was printed in two writes, split after its first byte: expected it back whole, "
           f"{word + ' ' + letter + ' end'!r}, got {excerpt(text)}; decode what is kept once, not each chunk on its own")


def _two_writes(first: bytes, second: bytes) -> str:
    """A command that writes `first`, waits until the tool has read all of it from the pipe (a second write before that
    would reach the tool in the same chunk), then writes `second`."""
    script = ("import fcntl, os, struct, sys, termios, time\n"
              f"os.write(1, {first!r})\n"
              "end = time.monotonic() + 5\n"
              "while time.monotonic() < end and struct.unpack('i', fcntl.ioctl(1, termios.FIONREAD, bytes(4)))[0]:\n"
              "    time.sleep(0.01)\n"
              f"os.write(1, {second!r})\n")
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"


@check("bash.bash-not-sh")
def bash_not_sh(lab: Lab) -> None:
    words = random.sample(WORDS, 3)
    text = parse(lab.ok("bash", command=f"items=({' '.join(words)}); [[ ${{items[2]}} == {words[2][:2]}* ]] && echo \"${{items[1]}}-${{#items[@]}}\"")).body
    expect(text == f"{words[1]}-3", f"a bash array and [[ ]] should work (the command runs with bash, not sh): expected '{words[1]}-3', got {excerpt(text)}")


@check("bash.stdin-closed")
def stdin_closed(lab: Lab) -> None:
    token = f"eof-{random.randint(1000, 9999)}"
    result, took = lab.timed("bash", open_stdin=True, command=f"cat; read -r line || echo {token}", timeout=5)
    if parse(result).body != token:
        took.excuse(5)  # held back 5 s by the machine, the command may never have had a CPU before its timeout
    expect(parse(result).body == token, f"a command that reads stdin should see end-of-input at once (stdin closed) and print {token}; "
                                        f"it took {took.wall:.1f} s and gave {excerpt(result.text)}")
    expect(not took.late(3), f"a command that reads a closed stdin should end at once; it took {took.wall:.1f} s")


@check("bash.timeout")
def timeout(lab: Lab) -> None:
    limit = round(shortest_timeout(lab) + 0.1, 3)  # not whole: N is the timeout given
    result, took = lab.timed("bash", command="echo waiting; sleep 30", timeout=limit)
    expect(result.is_error, f"a command past its timeout should be an is_error result, got {excerpt(result.text)}")
    output = parse(result)
    found = output.find("Command timed out")
    expect(found and float(found.group(1)) == limit, f"with timeout={limit:g} the result should end with 'Command timed out after {limit:g} seconds', "
                                                   f"got {excerpt(result.text[-100:])}")
    expect(took.wall >= limit, f"with timeout={limit:g} the command was stopped after {took.wall:.2f} s, before its timeout: the deadline "
                               "is the start plus the timeout as given, a number that need not be whole")
    if "waiting" not in output.body:
        took.excuse(limit)  # held back for the whole timeout, bash may never have had a CPU to print on before it
    expect("waiting" in output.body, f"output printed before the timeout should still come back, got {excerpt(result.text)}")
    expect(not took.late(5), f"a {limit:g}-second timeout should return in about {limit:g} s, it took {took.wall:.1f} s")


@check("bash.timeout-output-closed")
def timeout_output_closed(lab: Lab) -> None:
    # end-of-file on the pipe is not the end of the command: it closed its output and sleeps on, and only the timeout ends it
    limit = shortest_timeout(lab)
    result, took = lab.timed("bash", command="exec >&- 2>&-; sleep 6", timeout=limit)
    found = parse(result).find("Command timed out")
    expect(result.is_error and found and float(found.group(1)) == limit,
           f"a command that closes its output (exec >&- 2>&-) and sleeps 6 s, run with timeout {limit:g}, should end with 'Command timed out "
           f"after {limit:g} seconds' (is_error); after {took.wall:.1f} s it gave {excerpt(result.text[-100:])}: once the pipe is at its end, "
           "wait for bash only until the deadline, then kill the group")
    expect(not took.late(4.5), f"a command that closes its output, run with timeout {limit:g}, should be stopped after about {limit:g} s; it took {took.wall:.1f} s")


TICKER = "python -c \"import itertools, time\nfor n in itertools.count(): print('tick', n, flush=True); time.sleep(0.001)\""


@check("bash.timeout-while-printing")
def timeout_while_printing(lab: Lab) -> None:
    # a line every millisecond: never a quiet moment to a reader that waits for one, and little CPU (a bash loop
    # printing flat out took both cores for the whole timeout, starving every other check)
    from grader.boundary.clocks import CheckTimeout

    limit = shortest_timeout(lab)
    try:
        result, took = lab.timed("bash", command=TICKER, timeout=limit)
    except CheckTimeout as late:  # the check's own clock, not the tool's timeout, ended the command: say which clock failed
        if late.kind == "busy":
            raise
        raise CheckFailed(f"a command that never stops printing, run with timeout {limit:g}, was still running when the check's own "
                          "clock ran out: the tool's timeout never fired; read the clock on every round of the read loop, "
                          "not only when the pipe is quiet") from None
    tidy(parse(result), lab)
    found = parse(result).find("Command timed out")
    expect(result.is_error and found and float(found.group(1)) == limit, f"expected an is_error result ending 'Command timed out after {limit:g} seconds', got {excerpt(result.text[-100:])}")
    expect(not took.late(5), f"a command that never stops printing, run with timeout {limit:g}, should stop after about {limit:g} s; it took {took.wall:.1f} s")


@check("bash.kills-group")
def kills_group(lab: Lab) -> None:
    # the child ignores SIGTERM (as some servers do), and exec keeps that: only SIGKILL ends it
    limit = shortest_timeout(lab)
    result, took = lab.timed("bash", command="sh -c 'trap \"\" TERM; echo $$ > child.pid; exec sleep 60' & sleep 60", timeout=limit)
    expect(result.is_error, f"a command past its timeout should be an is_error result, got {excerpt(result.text)}")
    if not (lab.tmp / "child.pid").is_file():
        took.excuse(limit)  # held back for the whole timeout, the child may never have had a CPU to start on
    expect((lab.tmp / "child.pid").is_file(), f"the command never ran (it writes child.pid first); bash said {excerpt(result.text)}")
    pid = int(lab.files.read_text("child.pid"))  # the pid as the sandbox numbers it: the Lab looks it up
    try:
        alive = lab.outlives(pid, 2)  # a killed child may wait a while for a CPU to end on: that is the machine's
    finally:
        if lab.running(pid):
            lab.kill(pid)
    expect(not alive, "after a timeout, a child of the command (pid in child.pid, a process that ignores SIGTERM) was still running 2 s later; "
                      "expected the whole process group killed: os.killpg(process.pid, signal.SIGKILL)")


@check("bash.background")
def background(lab: Lab) -> None:
    result, took = lab.timed("bash", command="sleep 30 & echo started", timeout=20)
    expect(parse(result).body == "started" and not result.is_error, f"expected 'started', got {excerpt(result.text)}")
    expect(not took.late(5), f"a command that leaves `sleep 30 &` behind should return when bash exits; it took {took.wall:.1f} s")
    token = f"hi-{random.randint(1000, 9999)}"
    result, took = lab.timed("bash", command=f"(while :; do echo tick; sleep 0.2; done) & echo {token}", timeout=20)
    expect(token in parse(result).body.split("\n"), f"expected {token!r} on a line of its own among the output, got {excerpt(result.text)}")
    expect(not took.late(6), "a command that leaves a job behind that keeps printing should return when bash exits, after "
                             f"reading what is left for half a second at most; it took {took.wall:.1f} s")


@check("bash.drain-after-exit")
def drain_after_exit(lab: Lab) -> None:
    for attempt in range(4):  # what is left in the pipe at exit depends on timing: try a few times
        total, token = random.randint(40_000, 80_000), f"end-{random.randint(1000, 9999)}"
        # a short pause (the tool is in its read loop), then more than the pipe holds: seq writes as fast as the tool
        # reads, so the pipe is full again the moment a read empties it, and still full when bash exits right after
        output = parse(lab.ok("bash", command=f"sleep 0.02; seq 1 {total}; echo {token}"))
        kept = output.body.split("\n")
        try:
            expect_notice_format(output, "2000-line")
            expect(kept[-1:] == [token] and len(kept) == 2000,
                   f"bash printed {total} lines and {token!r} just before it exited: expected the last 2000 lines, ending {token!r}; "
                   f"got {len(kept)} lines ending {excerpt(kept[-1], 40)}")
            expect_spill(lab, output, total + 1 - 1999, total + 1, "2000-line")
        finally:
            tidy(output, lab)


# A job left behind that prints without pause, and its own witness of how the tool read it. Its stdout is the tool's pipe:
# it makes it a packet pipe (O_DIRECT: a read takes one write at most) of 256 packets of 2048 short lines each, and fills
# it before bash may exit, so a tool that reads while select(..., 0) says there is data always finds some, as long as
# the job gets a CPU once in the time a reader takes to empty it (~0.2 s feeding Tail; a few ms for a lean tail of the
# student's own, so the job writes up to 16 packets a call: one system call to the reader's sixteen). It looks at the pipe (FIONREAD) before and after
# each write, and reports in `drained`: how it ended (the tool closed the pipe, the check said stop, its life after
# bash's exit or its byte budget ran out), how long after bash exited it first found the pipe dry (the machine kept
# it from a CPU: nothing can be concluded), and the latest moment after bash's exit after which the tool was seen to
# read. The disk it costs is the spill file: a packet a read, about 4 MB a second of reading, 32 MB at most.
_PRINTER = """
import fcntl, os, select, struct, termios, time
def queued():
    return struct.unpack("i", fcntl.ioctl(1, termios.FIONREAD, bytes(4)))[0]
try:
    fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_DIRECT)
    fcntl.fcntl(1, 1031, 1 << 20)  # F_SETPIPE_SZ
except OSError:
    pass
size = fcntl.fcntl(1, 1032)  # F_GETPIPE_SZ
packet, bash, start = b"t\\n" * 2048, os.getppid(), time.monotonic()
left, exited, dry, read_after, ended = 32 << 20, None, None, 0.0, "life"
poller = select.poll()
poller.register(1, select.POLLOUT)
room = lambda wait: [mask for _, mask in poller.poll(wait)]
while left > 0 and room(0) == [select.POLLOUT]:
    os.write(1, packet)
    left -= len(packet)
open("started", "w").close()
last_t, last_q, looked = None, None, start
while True:
    events = room(50)
    now, q = time.monotonic(), queued()
    if exited is None and os.getppid() != bash:
        exited = now
    if exited is not None:
        if last_t is not None and last_t >= exited and q < last_q:
            read_after = max(read_after, last_t - exited)
        if q == 0 and dry is None:
            dry = now - exited
        if now - exited > 5:
            break
    if now - start > 20:
        break
    if events and events[0] & (select.POLLERR | select.POLLHUP):
        ended = "closed"
        break
    if not events or now - looked > 0.1:
        looked = now
        if os.path.exists("stop"):
            ended = "stop"
            break
    if not events:
        last_t, last_q = now, q
        continue
    if left <= 0:
        ended = "budget"
        break
    burst = packet * max(1, min(16, (size - q) // len(packet) - 2))  # what fits, less a slot for bash's last line
    try:
        os.write(1, burst)
    except BrokenPipeError:
        ended = "closed"
        break
    left -= len(burst)
    last_t, last_q = time.monotonic(), queued()
    if exited is not None and dry is None and last_q <= len(burst):
        dry = last_t - exited
with open("drained.part", "w") as report:
    report.write(f"{ended} {-1 if dry is None else dry:.3f} {read_after:.3f}")
os.rename("drained.part", "drained")
"""


@check("bash.drain-cap")
def drain_cap(lab: Lab) -> None:
    from grader.boundary.stopwatch import TooBusy

    token = f"left-{random.randint(1000, 9999)}"
    job = f"{shlex.quote(sys.executable)} -c {shlex.quote(_PRINTER)}"
    result, took = lab.timed("bash", command=f"{job} & for i in $(seq 1 500); do [ -e started ] && break; sleep 0.01; done; echo {token}",
                             timeout=30)
    tidy(parse(result), lab)
    lab.file("stop", "")
    if not lab.files.is_file("started"):  # the job writes it in the directory it was started in, before bash ends
        took.excuse(5)  # held back the 5 s bash waits for it, the job may never have had a CPU to start on
        raise CheckFailed(f"the command starts a job that writes a file named `started` in the working directory, and none is "
                          f"there: does the tool run the command in cwd? bash said {excerpt(result.text[-200:])}")
    for _ in range(100):  # the job's report, once it has had a CPU to look at the pipe a last time
        if lab.files.is_file("drained"):
            break
        time.sleep(0.05)
    else:
        raise TooBusy()
    ended, dry, read_after = lab.files.read_text("drained").split()
    dry, read_after = float(dry), float(read_after)
    expect(not result.is_error, f"bash exited 0, leaving a job behind that keeps printing; expected a result that is not an error, got {excerpt(result.text[-200:])}")
    advice = ("look at process.poll() on every round, not only when the pipe is quiet, and once bash has exited, read what is left "
              "while select(..., 0) says there is data, for half a second at most, then stop")
    expect(read_after < 1.5, f"bash exited, leaving a job behind that prints without pause, and the tool was still reading its output "
                           f"{read_after:.1f} s later (it returned after {took.wall:.1f} s): {advice}")
    if ended == "life":  # the tool neither returned nor closed the pipe in the 5 s the job printed after bash's exit
        expect(not took.late(5), f"bash exited, leaving a job behind that prints without pause, and the tool took {took.wall:.1f} s to return: {advice}")
    if dry >= 0 and ended != "budget":  # the pipe ran dry before the tool stopped reading: the machine kept the job from a
        raise TooBusy()                  # CPU, nothing is shown (a tool that read all 32 MB so soon is too quick to judge here)


@check("bash.signal")
def killed_by_signal(lab: Lab) -> None:
    for number in (signal.SIGKILL, signal.SIGTERM, random.choice([signal.SIGHUP, signal.SIGUSR1])):  # a name fixed to SIGKILL fails the second
        result = lab.error("bash", command=f"echo before; kill -{int(number)} $$")
        output = parse(result)
        found = output.find("Command was killed")
        want = f"Command was killed by signal {int(number)} ({number.name})"
        expect(found and found.group(1, 2) == (str(int(number)), number.name), f"expected the result to end with {want!r}, got {excerpt(result.text[-100:])}")
        expect("before" in output.body, f"what the command printed before it was killed should come back, got {excerpt(result.text)}")


@check("bash.missing-cwd")
def missing_cwd(lab: Lab) -> None:
    moved = lab.tmp.with_name(lab.tmp.name + "-moved")
    lab.tmp.rename(moved)
    try:
        result = lab.tool("bash", command="echo hi")
    finally:
        moved.rename(lab.tmp)
    text = result.text
    expect(result.is_error, f"a working directory that does not exist should be an is_error result, got {excerpt(text)}")
    expect(lab.tmp.name in text, f"the error should name the missing directory ({lab.tmp}), got {excerpt(text)}")
    left = _temp_files(lab)
    expect(not left, f"a command that could not start should leave no spill file; found {', '.join(path.name for path in left)} in the temp folder")


@check("bash.spill-only-when-cut")
def spill_only_when_cut(lab: Lab) -> None:
    token = f"kept-{random.randint(10**8, 10**9)}"
    output = parse(lab.ok("bash", command=f"echo {token}"))
    expect(output.body == token and not output.notices, f"expected just {token!r}, got {excerpt(output.body)}")
    left = _temp_files(lab)
    expect(not left, f"output that was not cut should leave no spill file behind; found {', '.join(path.name for path in left)} in the temp folder")


@check("bash.bounded-memory")
def bounded_memory(lab: Lab) -> None:
    result, peak = lab.measure("bash", command="yes $(printf 'x%.0s' $(seq 1 200)) | head -n 40000")  # 8 MB: twice the bound
    output = parse(result)
    tidy(output, lab)
    found = output.find("[Showing")
    expect(found and found.group(4) == "50.0KB", f"8 MB of output should be cut to its tail with a (50.0KB limit) notice, got {excerpt(result.text[-160:])}")
    expect(peak < 4_000_000, f"8 MB of output took {peak / 1e6:.0f} MB of memory; expected under 4 MB")


@check("bash.stash-scenario")
def stash_scenario(lab: Lab) -> None:
    run = lab.scenario(2)
    runs = [result_text(block) for block in tool_results(run.messages) if "passed" in result_text(block) or "failed" in result_text(block)]
    expect(runs and "2 failed" in runs[-1], f"running stash's suite should report '2 failed', got {excerpt(runs[-1][-300:] if runs else '(no test run)')}")


def _temp_files(lab: Lab) -> list[Path]:
    """The files in this check's own temp folder (the student's code's TMPDIR, which no other check shares)."""
    return [lab.temp_dir / name for name in lab.temp_files.listdir() if lab.temp_files.is_file(name)]
