"""Unpacking a student's zip safely: bounded in bytes and in entries (both read before anything is written), no
links, nothing outside its folder.

The entry count is the count of entries in the central directory, walked header by header as zipfile would walk
it (and no further than one past the cap), not the count the end record claims: a zip whose end record says 1 entry
and whose directory holds 60,035 is refused in milliseconds (zipfile trusts the directory, and would unpack all).
"""
from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path

ZIP_BYTES, ZIP_ENTRIES = 200 << 20, 10_000  # what one submission may unpack to
DIRECTORY_BYTES = 128 << 20  # a central directory larger than this is refused unread
_HEADER = struct.Struct("<4s24xHHH12x")  # a central directory header: signature, ..., name, extra and comment lengths
_CENTRAL = b"PK\x01\x02"


class Unpackable(Exception):
    """Why a zip is not unpacked: one line for the student's row."""


def unpack(archive: Path, target: Path) -> None:
    try:
        count, claimed = zip_entries(archive)
        if count > ZIP_ENTRIES:
            raise Unpackable(f"the zip holds more than {ZIP_ENTRIES:,} entries; at most {ZIP_ENTRIES:,} are unpacked")
        if count != claimed:
            raise Unpackable(f"not a readable zip: its end record says {claimed:,} entries, its directory holds {count:,}")
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            if sum(member.file_size for member in members) > ZIP_BYTES:
                raise Unpackable(f"unpacks to more than {ZIP_BYTES >> 20} MB")
            for member in members:
                if (member.external_attr >> 16) & 0o170000 == 0o120000:
                    continue  # a symlink could point anywhere on the grader's machine
                bundle.extract(member, target)  # zipfile strips absolute paths and `..` parts
    except (zipfile.BadZipFile, OSError, ValueError, struct.error) as problem:
        raise Unpackable(f"not a readable zip: {problem}") from None


def zip_entries(archive: Path) -> tuple[int, int]:
    """(entries in the central directory, entries its end record claims): the first counted header by header, up to
    ZIP_ENTRIES + 1, over the directory zipfile reads (zip64 too)."""
    with archive.open("rb") as bundle:
        size = bundle.seek(0, os.SEEK_END)
        bundle.seek(max(0, size - (1 << 16) - 22))
        start = bundle.tell()
        tail = bundle.read()
        end = tail.rfind(b"PK\x05\x06")
        if end < 0 or len(tail) - end < 22:
            raise zipfile.BadZipFile("no end of central directory")
        claimed, directory_size = struct.unpack_from("<HI", tail, end + 10)
        record_at = start + end  # where the directory ends: the end record, or the zip64 record before it
        locator = tail.rfind(b"PK\x06\x07", 0, end)
        if locator >= 0 and end - locator == 20:  # zip64: the counts are in the zip64 end record the locator points at
            bundle.seek(int.from_bytes(tail[locator + 8:locator + 16], "little"))
            at = bundle.tell()
            record = bundle.read(56)
            if record[:4] == b"PK\x06\x06":
                claimed, directory_size = struct.unpack_from("<QQ", record, 32)
                record_at = at
        if directory_size > DIRECTORY_BYTES or directory_size > record_at:
            raise zipfile.BadZipFile(f"a central directory of {directory_size:,} bytes")
        bundle.seek(record_at - directory_size)
        return _count(bundle.read(directory_size)), claimed


def _count(directory: bytes) -> int:
    count = offset = 0
    while offset + _HEADER.size <= len(directory) and count <= ZIP_ENTRIES:
        signature, name, extra, comment = _HEADER.unpack_from(directory, offset)
        if signature != _CENTRAL:
            raise zipfile.BadZipFile(f"a broken central directory (entry {count + 1:,})")
        offset += _HEADER.size + name + extra + comment
        count += 1
    return count
