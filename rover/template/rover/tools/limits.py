"""Output caps shared by every tool, so descriptions and code quote the same numbers."""
from __future__ import annotations

MAX_LINES = 2000
MAX_BYTES = 50 * 1024


def format_size(size: int) -> str:
    """Sizes the way the notices print them: 812B, 50.0KB, 1.2MB."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"
