"""The deployment picture: a timeline with one lane per server, and the topology.

Each execution plan is a bar on its server's lane from the time it was sent to
the time its answer came (green success, red error, orange timeout, blue still
running); each stack push is a diamond on the ``stack`` lane with a dashed line
across the others; an arrow joins a plan to a later one on another lane when a
distinctive value of the first's result is among the second's inputs. The
topology shows the applications, the servers each one holds, and the networks.

Everything is inline SVG (no script, no external asset): the same markup goes
in a web page and in the self-contained file ``murano-engine deploy --report``
writes.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Iterable, Mapping
from typing import Any

LANE = 34
LEFT = 150
WIDTH = 900
COLOURS = {"success": "#2e9d4f", "error": "#d0343a", "timeout": "#e8912d",
           "running": "#3b7dd8"}


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def plan_bars(steps: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The plans of ``steps``: lane, name, sent, answered (None while running), result,
    inputs and outputs (digests), in the order they were sent."""
    bars: dict[str, dict[str, Any]] = {}
    for step in steps:
        if step.get("kind") != "plan":
            continue
        key = str(step.get("key"))
        if step.get("phase") == "sent":
            bars[key] = {"lane": str(step.get("lane")), "name": str(step.get("name")),
                         "sent": step.get("timestamp"), "answered": None,
                         "result": "running", "inputs": set(step.get("inputs") or ()),
                         "outputs": set(), "error": None}
        elif step.get("phase") == "answered" and key in bars:
            bars[key].update(answered=step.get("timestamp"),
                             result=str(step.get("result") or "success"),
                             outputs=set(step.get("outputs") or ()), error=step.get("error"))
    return [b for b in bars.values() if b["sent"] is not None]


def arrows(bars: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(from, to) indexes: a plan's output reached a later plan on another lane (the
    latest such source for each value)."""
    found = []
    for target, bar in enumerate(bars):
        for value in bar["inputs"]:
            sources = [i for i, b in enumerate(bars) if value in b["outputs"]
                       and b["answered"] is not None and b["answered"] <= bar["sent"]
                       and b["lane"] != bar["lane"]]
            if sources:
                source = max(sources, key=lambda i: bars[i]["answered"])
                if (source, target) not in found:
                    found.append((source, target))
    return found


def timeline_svg(steps: list[Mapping[str, Any]], now: float | None = None) -> str:
    """The timeline as an SVG element (empty-state text when there are no steps)."""
    bars = plan_bars(steps)
    stacks = [s for s in steps if s.get("kind") == "stack" and s.get("timestamp")]
    if not bars and not stacks:
        return '<p class="empty">No execution plan or stack push yet.</p>'
    times = [b["sent"] for b in bars] + [b["answered"] for b in bars if b["answered"]]
    times += [s["timestamp"] for s in stacks] + [s["started"] for s in stacks
                                               if s.get("started")]
    start = min(times)
    end = max([*times, now or 0.0]) if any(b["answered"] is None for b in bars) \
        else max(times)
    span = max(end - start, 0.001)

    def x(t: float) -> float:
        return LEFT + (t - start) / span * (WIDTH - LEFT - 20)

    lanes = ["stack"] + list(dict.fromkeys(b["lane"] for b in bars))
    height = 40 + LANE * len(lanes) + 20
    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
             f'height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" '
             f'font-size="11"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" '
             f'markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path '
             f'd="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>']
    for offset, label in ticks(span):
        t = start + offset
        parts.append(f'<line x1="{x(t):.1f}" y1="30" x2="{x(t):.1f}" y2="{height - 15}" '
                     f'stroke="#eee"/><text x="{x(t):.1f}" y="22" text-anchor="middle" '
                     f'fill="#777">{label}</text>')
    for index, lane in enumerate(lanes):
        y = 34 + index * LANE
        label = "Heat stack" if lane == "stack" else lane
        shade = "#f6f6f6" if index % 2 else "#fbfbfb"
        parts.append(f'<g class="lane" data-lane="{_esc(lane)}"><rect x="0" y="{y}" '
                     f'width="{WIDTH}" height="{LANE - 4}" fill="{shade}"/>'
                     f'<text x="8" y="{y + LANE / 2 + 2}" font-weight="bold">{_esc(label)}</text>')
        if lane == "stack":
            for s in stacks:
                cx, cy = x(s["timestamp"]), y + (LANE - 4) / 2
                parts.append(
                    f'<path class="stack-mark" data-name="{_esc(s.get("name"))}" '
                    f'd="M{cx:.1f},{cy - 7:.1f} l7,7 l-7,7 l-7,-7 z" fill="#7a4fb5">'
                    f'<title>stack {_esc(s.get("name"))} pushed at '
                    f'+{s["timestamp"] - start:.1f}s</title></path>')
        for bar in (b for b in bars if b["lane"] == lane):
            x0 = x(bar["sent"])
            x1 = x(bar["answered"] if bar["answered"] is not None else end)
            w = max(x1 - x0, 3)
            took = (bar["answered"] or end) - bar["sent"]
            tip = f'{bar["name"]}: {bar["result"]} after {took:.1f}s' + (
                f' - {bar["error"]}' if bar["error"] else "")
            parts.append(
                f'<g class="plan {bar["result"]}" data-name="{_esc(bar["name"])}" '
                f'data-result="{bar["result"]}"><rect x="{x0:.1f}" y="{y + 3}" '
                f'width="{w:.1f}" height="{LANE - 10}" rx="3" '
                f'fill="{COLOURS.get(bar["result"], "#888")}"><title>{_esc(tip)}</title></rect>'
                + (f'<text x="{x0 + 3:.1f}" y="{y + LANE / 2 + 2}" fill="white" '
                   f'pointer-events="none">{_esc(_short(bar, w))}</text>'
                   if w > 30 else "") + "</g>")
        parts.append("</g>")
    for s in stacks:
        parts.append(f'<line x1="{x(s["timestamp"]):.1f}" y1="34" '
                     f'x2="{x(s["timestamp"]):.1f}" y2="{height - 15}" stroke="#7a4fb5" '
                     f'stroke-dasharray="3,3"/>')
    for source, target in arrows(bars):
        a, b = bars[source], bars[target]
        ya = 34 + lanes.index(a["lane"]) * LANE + LANE / 2 - 2
        yb = 34 + lanes.index(b["lane"]) * LANE + LANE / 2 - 2
        parts.append(f'<line class="flow" x1="{x(a["answered"]):.1f}" y1="{ya:.1f}" '
                     f'x2="{x(b["sent"]):.1f}" y2="{yb:.1f}" stroke="#555" '
                     f'marker-end="url(#arrow)"><title>{_esc(a["name"])} → '
                     f'{_esc(b["name"])}</title></line>')
    parts.append("</svg>")
    return "".join(parts)


def ticks(span: float, most: int = 6) -> list[tuple[float, str]]:
    """``(seconds, label)`` of the time axis: at most ``most`` round steps (1, 2 or 5 times
    a power of ten) from 0 to ``span``, each label different from the others."""
    raw = max(span, 0.001) / (most - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    decimals = max(0, -math.floor(math.log10(step)))
    count = int(span / step + 1e-9)
    return [(i * step, f"{i * step:.{decimals}f}s") for i in range(count + 1)]


def lanes(steps: Iterable[Mapping[str, Any]]) -> list[str]:
    """The servers plans went to."""
    return list(dict.fromkeys(str(s.get("lane")) for s in steps if s.get("kind") == "plan"))


def _short(bar: Mapping[str, Any], width: float) -> str:
    """A bar's label: its name without the `` @ server`` the lane already says, cut to
    the bar's width."""
    name = str(bar["name"])
    suffix = f" @ {bar['lane']}"
    name = name[:-len(suffix)] if name.endswith(suffix) else name
    room = int(width / 6.2)
    return name if len(name) <= room else name[:max(room - 1, 1)] + "…"


def _objects(value: Any) -> Iterable[Mapping[str, Any]]:
    """The objects in ``value``, less templates (a ``template`` property holds the
    shape of servers to come, not a server)."""
    if isinstance(value, Mapping):
        if isinstance(value.get("?"), Mapping):
            yield value
        for key, item in value.items():
            if key != "template":
                yield from _objects(item)
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item)


def _type(obj: Mapping[str, Any]) -> str:
    """The class name of an object (without the ``/version@package`` the engine adds)."""
    return str(obj["?"].get("type") or "").split("/", 1)[0]


def topology(objects: Mapping[str, Any] | None, servers: Iterable[str] = ()
             ) -> dict[str, Any]:
    """``{applications: [{name, type, servers: [names]}], networks: [names]}`` of a model's
    ``Objects``. Servers are instances (classes named ``...Instance``) and the objects
    named like a lane of the timeline (``servers``: subclasses the model does not
    reveal)."""
    lanes = set(servers)

    def is_server(obj: Mapping[str, Any]) -> bool:
        return _type(obj).endswith("Instance") or str(obj.get("name")) in lanes

    objects = objects or {}
    apps = []
    for app in objects.get("applications") or objects.get("services") or []:
        if not isinstance(app, Mapping) or not isinstance(app.get("?"), Mapping):
            continue
        header = app["?"]
        shown = (header.get("_26411a1861294160833743e45d0eaad9") or {}).get("name") \
            or header.get("name")
        servers = list(dict.fromkeys(str(o.get("name") or o["?"].get("id"))
                                     for o in _objects(app) if o is not app and is_server(o)))
        apps.append({"name": str(shown or app.get("name") or _type(app).rsplit(".", 1)[-1]),
                     "type": _type(app), "servers": servers})
    networks = [str(o.get("name") or _type(o).rsplit(".", 1)[-1])
                for o in _objects(objects.get("defaultNetworks") or {})
                if "Network" in _type(o)]
    return {"applications": apps, "networks": networks}


def topology_svg(objects: Mapping[str, Any] | None, servers: Iterable[str] = ()) -> str:
    """The topology: the environment's networks on top, each application a box with
    its servers."""
    shape = topology(objects, servers)
    if not shape["applications"]:
        return '<p class="empty">No application.</p>'
    width = max(220 * len(shape["applications"]) + 20, 300)
    rows = max([len(a["servers"]) for a in shape["applications"]] + [0])
    height = 110 + 30 * rows
    parts = [f'<svg class="topology" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" '
             f'font-size="12">']
    nets = ", ".join(shape["networks"]) or "the environment's network"
    parts.append(f'<rect x="10" y="8" width="{width - 20}" height="24" rx="12" '
                 f'fill="#e3eefc"/><text x="20" y="24" class="network">network: '
                 f'{_esc(nets)}</text>')
    for index, app in enumerate(shape["applications"]):
        x = 10 + index * 220
        parts.append(f'<g class="application" data-name="{_esc(app["name"])}"><line '
                     f'x1="{x + 100}" y1="32" x2="{x + 100}" y2="48" stroke="#8aa"/><rect '
                     f'x="{x}" y="48" width="200" height="{height - 58}" rx="6" fill="#fff" '
                     f'stroke="#8aa"/><text x="{x + 10}" y="66" font-weight="bold">'
                     f'{_esc(app["name"])}</text><text x="{x + 10}" y="80" fill="#777" '
                     f'font-size="10">{_esc(app["type"])}</text>')
        for row, server in enumerate(app["servers"]):
            y = 90 + row * 30
            parts.append(f'<g class="server" data-name="{_esc(server)}"><rect x="{x + 10}" '
                         f'y="{y}" width="180" height="24" rx="4" fill="#eef6ee" '
                         f'stroke="#6a6"/><rect x="{x + 18}" y="{y + 7}" width="12" '
                         f'height="9" rx="1" fill="none" stroke="#464"/><text x="{x + 36}" '
                         f'y="{y + 16}">'
                         f'{_esc(server)}</text></g>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
.legend span { display: inline-block; margin-right: 1em; }
.legend svg { margin-right: 4px; vertical-align: middle; }
table.reports { border-collapse: collapse; font-size: 0.9em; }
table.reports td { border-bottom: 1px solid #eee; padding: 3px 8px; vertical-align: top; }
tr.error td { color: #b00; } tr.warning td { color: #a60; }
pre.stack { background: #fff4f4; border: 1px solid #e99; padding: 8px; white-space: pre-wrap; }
svg { max-width: 100%; height: auto; }
"""


def legend() -> str:
    items = "".join(f'<span>{_swatch(c)}{n}</span>' for n, c in COLOURS.items())
    return (f'<p class="legend">{items}<span>{_swatch("#7a4fb5")}stack '
            f'push</span><span>→ a result used by a later plan</span></p>')


def _swatch(colour: str) -> str:
    """A small square of ``colour`` (SVG: the pages' policy forbids style attributes)."""
    return (f'<svg class="swatch" width="12" height="12"><rect width="12" height="12" '
            f'rx="2" fill="{colour}"/></svg>')


def reports_table(reports: Iterable[Mapping[str, Any]], start: float | None = None) -> str:
    rows = []
    for report in reports:
        stamp = report.get("timestamp")
        try:
            when = f"+{float(stamp) - start:.1f}s" if start is not None else clock(stamp)
        except (TypeError, ValueError):
            when = ""
        rows.append(f'<tr class="{_esc(report.get("level"))}"><td>{when}</td><td>'
                    f'{_esc(report.get("level"))}</td><td>{_esc(report.get("text"))}</td></tr>')
    return f'<table class="reports">{"".join(rows)}</table>'


def clock(stamp: Any) -> str:
    """A report's time stamp (seconds since the epoch) as the local time of day."""
    try:
        return time.strftime("%H:%M:%S", time.localtime(float(stamp)))
    except (TypeError, ValueError):
        return str(stamp or "")


def document(title: str, steps: list[Mapping[str, Any]], reports: list[Mapping[str, Any]],
             objects: Mapping[str, Any] | None, failure: Mapping[str, Any] | None = None
             ) -> str:
    """One self-contained HTML file: the timeline, the topology, the reports and, for a
    failed run, the MuranoPL error and stack."""
    stamps = [float(s["timestamp"]) for s in [*steps, *reports]
              if isinstance(s.get("timestamp"), (int, float))]
    start = min(stamps) if stamps else None
    failed = ""
    if failure:
        stack = failure.get("stack") or failure.get("traceback") or failure.get("details")
        failed = (f'<h2>Failed: {_esc(failure.get("message"))}</h2><pre class="stack">'
                  f'{_esc(stack or "")}</pre>')
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{_esc(title)}</title>'
            f'<style>{STYLE}</style></head><body><h1>{_esc(title)}</h1>{failed}'
            f'<h2>Timeline</h2>{legend()}{timeline_svg(steps)}'
            f'<h2>Topology</h2>{topology_svg(objects, lanes(steps))}'
            f'<h2>Reports</h2>{reports_table(reports, start)}</body></html>\n')
