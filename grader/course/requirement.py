"""The pip requirement a workspace's dev container installs the kit from, written in when it is rendered.

`WORKSHOP_KIT` wins (the variable the workspace's grade workflow reads too); otherwise the address pip
recorded when it installed this kit (PEP 610's direct_url.json), if a container can reach it: a git
repository or a web address, never a folder on this machine. Empty when neither is known.
"""
from __future__ import annotations

import json
import os
from importlib import metadata
from urllib.parse import urlsplit

DISTRIBUTION = "workshop-kit"
UNSAFE = set('"$`\\\n\r')  # the requirement lands in a shell script, between double quotes


def kit_requirement() -> str:
    chosen = os.environ.get("WORKSHOP_KIT", "").strip() or installed_from()
    return "" if UNSAFE & set(chosen) else chosen


def installed_from() -> str:
    """`git+URL@REF` or an https URL, as pip would take it again; empty for a local or an index install."""
    try:
        recorded = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return ""
    return requirement_from(json.loads(recorded)) if recorded else ""


def requirement_from(direct_url: dict) -> str:
    url = str(direct_url.get("url", ""))
    if not url.startswith(("https://", "http://", "ssh://")) or urlsplit(url).password:
        return ""  # a folder only this machine has, or an address with a password the workspace must not carry
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict):
        revision = vcs.get("requested_revision") or vcs.get("commit_id")
        return f"{vcs.get('vcs', 'git')}+{url}" + (f"@{revision}" if revision else "")
    return url if "archive_info" in direct_url else ""
