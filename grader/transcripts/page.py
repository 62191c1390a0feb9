"""The transcript page: one run, or two side by side on one scale. A self-contained HTML file (inline CSS and a
little JS, no network): the chart is SVG drawn here, each segment a link to its block below, so it works with
JavaScript off; the script only lights up a block across every bar it was sent in, and opens folded text.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from grader.transcripts.chart import Segment, segments
from grader.transcripts.load import Run
from grader.transcripts.turns import Folded, Turn, clean, turns

PRICES = {"input_tokens": 3.00, "output_tokens": 15.00, "cache_read_input_tokens": 0.30, "cache_creation_input_tokens": 3.75}
TOOLS = ("ls", "read", "bash", "edit", "write", "search")  # each its own colour; any other tool shares one
HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 270, 46, 52, 24, 22  # the chart's drawing, in SVG units
WIDTHS = {1: 1100, 2: 640}  # one run across the page, or two beside each other: text stays the same size
KIND_ORDER = ("k-system", "k-tools", "k-task", "k-model")
BIGGEST = 5


@dataclass
class Rect:
    x: float
    y: float
    width: float
    height: float
    css: str
    href: str
    title: str
    key: str


@dataclass
class Axis:
    y: float
    label: str


@dataclass
class RunView:
    name: str
    prefix: str
    model: str
    totals: list[tuple[str, str]]
    biggest: list[tuple[str, str, str]]  # (href, what, how often and how much)
    rects: list[Rect]
    ticks: list[Axis]
    billed_ticks: list[Axis]
    billed_line: str
    labels: list[Axis]  # request numbers along the bottom (x in `y`)
    turns: list[Turn]
    sent: int = 0  # input tokens of every request, added up: what was billed
    written: int = 0  # output tokens
    cost: float = 0.0
    note: str = ""
    legend: list[tuple[str, str]] = field(default_factory=list)
    system: Folded | None = None
    tool_defs: Folded | None = None


def render(runs: list[Run]) -> str:
    """The page for one run, or for two beside each other."""
    measured = [_measure(run) for run in runs]
    top = max([sum(s.tokens for s in bar) for bars in measured for bar in bars] or [1]) or 1
    billed = max([sum(sum(s.tokens for s in bar) for bar in bars) for bars in measured] or [1]) or 1
    slots = max([len(bars) for bars in measured] or [1]) or 1
    width = WIDTHS[len(runs)]
    views = [_view(run, bars, f"r{n}-", top, billed, slots, width) for n, (run, bars) in enumerate(zip(runs, measured))]
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), autoescape=True,
                                     undefined=jinja2.StrictUndefined)
    return environment.get_template("page.html.jinja").render(
        runs=views, comparison=_comparison(views), title=clean(" vs ".join(view.name for view in views)), tools=TOOLS,
        width=width, height=HEIGHT, left=LEFT, right=RIGHT)


def _measure(run: Run) -> list[list[Segment]]:
    first: dict[str, str] = {}
    return [segments(run, request, first) for request in run.requests]


def _view(run: Run, bars: list[list[Segment]], prefix: str, top: int, most_billed: int, slots: int, width: int) -> RunView:
    plot_w, plot_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / slots
    rects, points, stubs, sent, billed = [], [], {}, {}, 0
    for number, bar in enumerate(bars, 1):
        x, y = LEFT + (number - 1) * slot + slot * 0.15, HEIGHT - BOTTOM
        for segment in bar:
            height = segment.tokens / top * plot_h
            y -= height
            rects.append(Rect(round(x, 2), round(y, 2), round(slot * 0.7, 2), round(height, 2), _css(segment),
                              f"#{prefix}{_anchor(segment.key)}", f"request {number}: {_what(segment)}, {segment.tokens:,} tokens",
                              prefix + segment.key))
            times, tokens = sent.get(segment.key, (0, 0))
            sent[segment.key] = (times + (segment.kind != "stub"), tokens + segment.tokens)
            if segment.kind == "stub" and segment.key not in stubs:
                stubs[segment.key] = (number, _stub_text(run, number, segment.key))
        billed += sum(segment.tokens for segment in bar)
        points.append(f"{LEFT + (number - 0.5) * slot:.1f},{HEIGHT - BOTTOM - billed / most_billed * plot_h:.1f}")
    what: dict[str, str] = {}
    for bar in bars:
        for segment in bar:
            what.setdefault(segment.key, _what(segment))  # as first sent, not as its stub
    biggest = sorted(sent.items(), key=lambda item: item[1][1], reverse=True)[:BIGGEST]
    return RunView(
        name=clean(Path(run.name).stem), prefix=prefix, model=clean(_model(run.model)), totals=_totals(run, billed),
        biggest=[(f"#{prefix}{_anchor(key)}", clean(what[key]), f"sent {times}× · {tokens:,} tokens in all")
                 for key, (times, tokens) in biggest],
        rects=rects, ticks=_ticks(top, plot_h), billed_ticks=_ticks(most_billed, plot_h), billed_line=" ".join(points),
        labels=[Axis(LEFT + (n - 0.5) * slot, str(n)) for n in range(1, len(bars) + 1) if len(bars) <= 20 or n % 5 == 0 or n == 1],
        turns=turns(run, prefix, stubs, sent), sent=billed, written=sum(request.usage["output_tokens"] for request in run.requests),
        cost=_cost(run),
        note="an old transcript (messages only): every figure is estimated at 4 characters a token" if run.estimated else "",
        legend=_legend(bars), system=Folded.of(run.system) if run.system else None,
        tool_defs=Folded.of(json.dumps(run.tools, indent=1, ensure_ascii=False), shown=0) if run.tools else None)


def _anchor(key: str) -> str:
    return {"system": "m-system", "tools": "m-tools"}.get(key, key)


def _css(segment: Segment) -> str:
    tool = segment.tool if segment.tool in TOOLS else "other"
    return {"tool": f"k-tool t-{tool}", "stub": f"k-stub t-{tool}"}.get(segment.kind, f"k-{segment.kind}")


def _what(segment: Segment) -> str:
    what = {"system": "system prompt", "tools": "tool definitions", "task": "task", "model": "model's turn",
            "tool": f"{segment.tool or 'tool'} result", "stub": f"{segment.tool or 'tool'} result, as its stub"}[segment.kind]
    if segment.kind == "model" and segment.tool:
        what = f"{segment.tool} call"
    return f"{what}: {segment.detail}" if segment.detail else what


def _model(name: str) -> str:
    """The model's name; a script by its file name, not the whole path."""
    return f"scripted: {Path(name[9:]).name}" if name.startswith("scripted:") else name or "unknown model"


def _stub_text(run: Run, number: int, key: str) -> str:
    m, b = (int(part[1:]) for part in key.split("-"))
    content = run.requests[number - 1].messages[m]["content"]
    block = content[b] if isinstance(content, list) else content
    return str(block.get("content", "")) if isinstance(block, dict) else str(block)


def _cost(run: Run) -> float:
    return sum(request.usage[key] * price for request in run.requests for key, price in PRICES.items()) / 1_000_000


def _totals(run: Run, sent: int) -> list[tuple[str, str]]:
    usage = {key: sum(request.usage[key] for request in run.requests) for key in PRICES}
    cost = _cost(run)
    seconds = sum(request.seconds or 0 for request in run.requests)
    return [("requests", f"{len(run.requests):,}"), ("input sent", f"{sent:,}"), ("out", f"{usage['output_tokens']:,}"),
            ("cache read", f"{usage['cache_read_input_tokens']:,}"), ("cache write", f"{usage['cache_creation_input_tokens']:,}"),
            ("cost ≈", f"${cost:.4f}"), ("model time", f"{seconds:.1f} s")]


def _ticks(top: int, plot_h: float) -> list[Axis]:
    step = _nice(top / 4)
    return [Axis(round(HEIGHT - BOTTOM - value / top * plot_h, 1), _k(value)) for value in range(0, top + 1, step)][:7]


def _nice(rough: float) -> int:
    magnitude = 10 ** max(0, len(str(int(rough))) - 1)
    return max(1, next(step * magnitude for step in (1, 2, 2.5, 5, 10) if step * magnitude >= rough))


def _k(tokens: float) -> str:
    return f"{tokens / 1000:g}k" if tokens >= 1000 else f"{tokens:g}"


def _legend(bars: list[list[Segment]]) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for bar in bars:
        for segment in bar:
            tool = segment.tool if segment.tool in TOOLS else "other"
            seen.setdefault(_css(segment), "model's turn" if segment.kind == "model" else _what(Segment("", segment.kind, tool, 0)))
    rank = {css: n for n, css in enumerate(KIND_ORDER)}
    return sorted(seen.items(), key=lambda item: (rank.get(item[0], 9), "stub" in item[0], item[0]))


def _comparison(views: list[RunView]) -> list[str]:
    """The two runs' ratios in one sentence, the dearer run first: input tokens (what the requests carried), output
    tokens (what the model wrote, at five times the price), and the estimated cost."""
    if len(views) != 2:
        return []
    cheap, dear = sorted(views, key=lambda view: (view.cost, view.sent))
    parts = [f"{high / low:.2f}× the {what} ({high:,} vs {low:,})" for what, high, low in
             (("input tokens", dear.sent, cheap.sent), ("output tokens", dear.written, cheap.written)) if low]
    if not parts:
        return []
    cost = f"; it cost {dear.cost / cheap.cost:.2f}× as much (≈ ${dear.cost:.4f} vs ${cheap.cost:.4f})" if cheap.cost else ""
    return [f"{dear.name} sent {' and '.join(parts)} of {cheap.name}{cost}"]
