"""The macOS Seatbelt profile, read as the S-expressions sandbox-exec parses (macOS cannot run here): it starts from
(deny default), writes only in the run folder, reaches no network, no keychain and no pasteboard, and every path is a
parameter, never pasted into the text."""
from __future__ import annotations

import re
from pathlib import Path

from grader.boundary.backends import seatbelt

TOKEN = re.compile(r'\s*(?:(;[^\n]*)|(\()|(\))|("(?:[^"\\]|\\.)*")|([^\s()";]+))')


def parse(text: str) -> list:
    """The profile's top-level forms as nested lists; a string stays quoted. Raises on anything unbalanced."""
    stack: list[list] = [[]]
    at = 0
    while at < len(text.rstrip()):
        found = TOKEN.match(text, at)
        assert found, f"cannot read the profile at {text[at:at + 40]!r}"
        comment, opening, closing, string, atom = found.groups()
        at = found.end()
        if opening:
            stack.append([])
        elif closing:
            assert len(stack) > 1, "a ) with no ("
            done = stack.pop()
            stack[-1].append(done)
        elif string or atom:
            stack[-1].append(string or atom)
    assert len(stack) == 1, "a ( never closed"
    return stack[0]


FORMS = parse(seatbelt.profile(2))


def rules(verb: str, operation: str) -> list[list]:
    return [form for form in FORMS if form[:2] == [verb, operation]]


def test_the_profile_is_well_formed_and_starts_from_deny_default():
    assert FORMS[0] == ["version", "1"] and FORMS[1] == ["deny", "default"]
    assert ["allow", "default"] not in FORMS
    assert all(form[0] in ("version", "allow", "deny") for form in FORMS)


def test_writes_only_in_the_run_folder_and_dev_null():
    writes = [filter_ for form in FORMS if form[0] == "allow" and any(op.startswith("file-write") for op in form[1:] if isinstance(op, str))
              for filter_ in form[2:]]
    assert ["subpath", ["param", '"RUN"']] in writes
    assert all(filter_ == ["subpath", ["param", '"RUN"']] or filter_[0] == "literal" and filter_[1].startswith('"/dev/')
               for filter_ in writes), writes


def test_no_network_no_keychain_no_pasteboard_and_signals_only_inside():
    allowed = [form[1] for form in FORMS if form[0] == "allow"]
    assert not [operation for operation in allowed if operation.startswith(("network", "system-socket"))]
    services = " ".join(str(form) for form in rules("allow", "mach-lookup"))
    assert "com.apple.system.opendirectoryd.libinfo" in services
    for refused in ("securityd", "SecurityServer", "pasteboard", "keychain"):
        assert refused.lower() not in services.lower(), refused
    assert rules("allow", "signal") == [["allow", "signal", ["target", "same-sandbox"]]]
    assert "procargs" not in str(rules("allow", "sysctl-read")), "kern.procargs2 holds other processes' environments"


def test_reads_are_the_systems_and_the_runs_never_the_home_folder():
    reads = [filter_ for form in rules("allow", "file-read*") for filter_ in form[2:]]
    assert ["subpath", ["param", '"READ_1"']] in reads and ["subpath", ["param", '"RUN"']] in reads
    assert not [filter_ for filter_ in reads if "Users" in str(filter_) or "HOME" in str(filter_)]


def test_paths_are_parameters_never_pasted():
    command = seatbelt.command(["python", "-c", "pass"], Path("/tmp/run x"), [Path("/kit"), Path('/ws ") (allow default')])
    assert command[:2] == [seatbelt.SANDBOX_EXEC, "-p"] and command[-3:] == ["python", "-c", "pass"]
    assert "RUN=/tmp/run x" in command and 'READ_1=/ws ") (allow default' in command
    assert "/tmp/run x" not in command[2] and "(allow default" not in command[2]
