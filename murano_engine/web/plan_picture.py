"""A plan drawn as the deployment picture is (:mod:`murano_engine.web.picture`).

One lane per server and one for the stacks: each plan a server would run is a
planned bar in its order, each stack push a diamond; a plan whose result the run
needs but cannot know is a bar marked ``?`` with what the branch depends on; the
servers a push deletes have their lane marked deleted from that push on. Time is
the plan's own order, not seconds: a bar is one step, side by side where the run's
branches are. Inline SVG only (the pages' policy forbids style attributes), the
same markup in a page and in ``murano-engine plan --report``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from murano_engine.web.picture import LANE, LEFT, STYLE, WIDTH, topology_svg

PLANNED, SENT, UNKNOWN, DELETED, PUSH = "#7fa7d9", "#b9cbe6", "#e8912d", "#d0343a", "#7a4fb5"


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _swatch(colour: str) -> str:
    return (f'<svg class="swatch" width="12" height="12"><rect width="12" height="12" '
            f'rx="2" fill="{colour}"/></svg>')


def lanes_of(plan: Mapping[str, Any]) -> list[str]:
    """The servers of the picture: those plans go to, then those deleted."""
    names = [entry["server"] for entry in plan["plans"]]
    names += [s["name"] for push in plan["pushes"] for s in push["servers"]["deleted"]]
    return list(dict.fromkeys(names))


def plan_svg(plan: Mapping[str, Any]) -> str:
    """The plan's timeline as an SVG element (a sentence when it does nothing)."""
    plans, pushes = plan["plans"], plan["pushes"]
    if not plans and not pushes:
        return '<p class="empty">The plan sends no execution plan and pushes no stack.</p>'
    span = max([e["end"] for e in [*plans, *pushes]] + [1.0])
    lanes = ["stack", *lanes_of(plan)]
    height = 40 + LANE * len(lanes) + 20

    def x(t: float) -> float:
        return LEFT + t / span * (WIDTH - LEFT - 20)

    def top(lane: str) -> int:
        return 34 + lanes.index(lane) * LANE

    parts = [f'<svg class="timeline plan" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
             f'height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" '
             f'font-size="11"><text x="{LEFT}" y="22" fill="#777">planned order (steps, '
             f'not seconds)</text>']
    deleted_at = {s["name"]: (number, push["start"]) for number, push in enumerate(pushes, 1)
                  for s in push["servers"]["deleted"]}
    stops = {stop["order"]: stop["text"] for stop in plan["stops"]}
    for index, lane in enumerate(lanes):
        y = top(lane)
        shade = "#f6f6f6" if index % 2 else "#fbfbfb"
        gone = lane in deleted_at
        label = "Heat stack" if lane == "stack" else lane + (" (deleted)" if gone else "")
        ink = DELETED if gone else "#222"
        parts.append(f'<g class="lane{" deleted" if gone else ""}" data-lane="{_esc(lane)}">'
                     f'<rect x="0" y="{y}" width="{WIDTH}" height="{LANE - 4}" fill="{shade}"/>'
                     f'<text x="8" y="{y + LANE / 2 + 2}" font-weight="bold" fill="{ink}">'
                     f'{_esc(label)}</text>')
        if lane == "stack":
            parts += [_push_mark(number, push, x(push["start"] + 0.5), y)
                      for number, push in enumerate(pushes, 1)]
        parts += [_bar(entry, x(entry["start"]), x(entry["end"]), y, stops.get(entry["order"]))
                  for entry in plans if entry["server"] == lane]
        if gone:
            number, when = deleted_at[lane]
            mid = y + (LANE - 4) / 2
            parts.append(f'<line class="deleted-mark" x1="{x(when):.1f}" y1="{mid:.1f}" '
                         f'x2="{WIDTH - 10}" y2="{mid:.1f}" stroke="{DELETED}" '
                         f'stroke-width="2" stroke-dasharray="6,3"><title>{_esc(lane)} is '
                         f'deleted by push {number}</title></line>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _push_mark(number: int, push: Mapping[str, Any], cx: float, y: float) -> str:
    """A stack push: a diamond on the stack lane, its diff in its title."""
    cy = y + (LANE - 4) / 2
    tip = (f"push {number}: {push['action']} stack {push['stack']}: "
           f"{len(push['added'])} added, {len(push['changed'])} changed, "
           f"{len(push['removed'])} removed")
    return (f'<path class="stack-mark" data-name="{_esc(push["stack"])}" '
            f'd="M{cx:.1f},{cy - 7:.1f} l7,7 l-7,7 l-7,-7 z" fill="{PUSH}">'
            f'<title>{_esc(tip)}</title></path>')


def _bar(entry: Mapping[str, Any], x0: float, x1: float, y: float, stop: str | None) -> str:
    """A plan on its server's lane, with what its branch depends on when it stops."""
    width = max(x1 - x0 - 2, 3)
    colour = {"sent": SENT, "unknown": UNKNOWN}.get(entry["result"], PLANNED)
    tip = entry["name"] + (f" - {stop}" if stop else "")
    label = _label(entry, width) + (" ?" if entry["result"] == "unknown" else "")
    return (f'<g class="plan planned {entry["result"]}" data-name="{_esc(entry["name"])}" '
            f'data-result="{entry["result"]}"><rect x="{x0 + 1:.1f}" y="{y + 3}" '
            f'width="{width:.1f}" height="{LANE - 10}" rx="3" fill="{colour}" '
            f'stroke="#3b5f8f" stroke-dasharray="4,2"><title>{_esc(tip)}</title></rect>'
            + (f'<text x="{x0 + 4:.1f}" y="{y + LANE / 2 + 2}" fill="#102a4c" '
               f'pointer-events="none">{_esc(label)}</text>' if width > 24 else "") + "</g>")


def _label(entry: Mapping[str, Any], width: float) -> str:
    name = str(entry["name"])
    suffix = f" @ {entry['server']}"
    name = name[:-len(suffix)] if name.endswith(suffix) else name
    room = max(int(width / 6.2) - 2, 1)
    return name if len(name) <= room else name[:room - 1] + "…"


def legend() -> str:
    items = [("planned plan", PLANNED), ("sent, not waited for", SENT),
             ("its result is needed: the branch stops (?)", UNKNOWN), ("stack push", PUSH),
             ("server deleted", DELETED)]
    return '<p class="legend">' + "".join(f"<span>{_swatch(c)}{n}</span>"
                                          for n, c in items) + "</p>"


def changes_html(plan: Mapping[str, Any]) -> str:
    """The plan's changes as lists: stacks, servers, plans per server, stops."""
    tables = []
    for stack in plan["stacks"]:
        state = {("absent", "present"): "made", ("present", "absent"): "deleted"}.get(
            (stack["before"], stack["after"]), "changed")
        rows = []
        for kind, sign in (("added", "+"), ("changed", "~"), ("removed", "-")):
            for item in stack[kind]:
                what = ", ".join(item.get("properties", []) + item.get("other", []))
                rows.append(f'<tr class="{kind}"><td>{sign}</td><td>{_esc(item["name"])}</td>'
                            f'<td>{_esc(item["type"])}</td><td>{_esc(what)}</td></tr>')
        tables.append(f'<h3>Stack {_esc(stack["name"])} ({state})</h3>'
                      f'<table class="list plan-stack" data-stack="{_esc(stack["name"])}">'
                      f'{"".join(rows) or "<tr><td>no change</td></tr>"}</table>')
    stacks = "".join(tables) or '<p class="help">No stack changes.</p>'
    servers = plan["servers"]
    items = [f'<li class="made">{_esc(s["name"])} is made ({_esc(s.get("flavor"))}, '
             f'{_esc(s.get("image"))})</li>' for s in servers["made"]]
    items += [f'<li class="changed">{_esc(s["name"])} changes: '
              f'{_esc(", ".join(s["properties"]))}</li>' for s in servers["changed"]]
    items += [f'<li class="deleted">{_esc(s["name"])} is deleted</li>'
              for s in servers["deleted"]]
    by_server: dict[str, list[str]] = {}
    stops = {stop["order"]: stop["text"] for stop in plan["stops"]}
    for entry in plan["plans"]:
        params = ", ".join(f"{k}={v}" for k, v in entry["parameters"].items())
        line = (f'<li class="{entry["result"]}">{_esc(entry["name"])}'
                + (f' <span class="help">scripts {_esc("; ".join(entry["scripts"]))}</span>'
                   if entry["scripts"] else "")
                + (f' <span class="help">parameters {_esc(params)}</span>' if params else "")
                + (f'<br><strong class="depends">{_esc(stops[entry["order"]])}</strong>'
                   if entry["order"] in stops else "") + "</li>")
        by_server.setdefault(entry["server"], []).append(line)
    plans = "".join(f'<h3>{_esc(server)}</h3><ol class="plans" data-server="{_esc(server)}">'
                    f'{"".join(lines)}</ol>' for server, lines in by_server.items())
    planned = {entry["order"] for entry in plan["plans"]}
    plans += "".join(f'<p><strong class="depends">{_esc(call["kind"])} '
                     f'{_esc(call["name"])}: not made</strong></p>'
                     for call in plan.get("elsewhere") or ())
    plans += "".join(f'<p><strong class="depends">{_esc(stop["text"])}</strong></p>'
                     for stop in plan["stops"] if stop["order"] not in planned)
    return (f'<h2>Stacks</h2>{stacks}<h2>Servers</h2>'
            + (f'<ul class="servers">{"".join(items)}</ul>' if items else
               '<p class="help">No server is made, changed or deleted.</p>')
            + f'<h2>Plans per server</h2>{plans or "<p class=help>No plan is sent.</p>"}')


def title(plan: Mapping[str, Any]) -> str:
    env = plan["environment"]
    action = plan["action"]
    what = "destroy" if action is None else "deploy" if action.get("method") == "deploy" \
        else f"action {action.get('method')}"
    return f"Plan of the {what} of environment {env.get('name') or env.get('id')}"


def fragment(plan: Mapping[str, Any]) -> str:
    """What a page shows of a plan: the outcome, the picture, the changes, the reports."""
    outcome = {"complete": "The run would end here.",
               "stopped": f"{len(plan['stops'])} branch(es) stop where a script's result is "
                          "needed; what they do next is not shown.",
               "failed": f"The run would fail: {(plan.get('failure') or {}).get('message')}"}
    reports = "".join(f'<tr class="{_esc(r.get("level"))}"><td>{_esc(r.get("level"))}</td>'
                      f'<td>{_esc(r.get("text"))}</td></tr>' for r in plan["reports"])
    return (f'<p class="plan-outcome" data-outcome="{plan["outcome"]}">'
            f'{_esc(outcome[plan["outcome"]])} Nothing was made, changed or sent.</p>'
            f'{legend()}<div class="picture">{plan_svg(plan)}'
            f'{topology_svg(plan.get("model"), lanes_of(plan))}</div>{changes_html(plan)}'
            f'<h2>Reports the deploy would send</h2><table class="reports">{reports}</table>')


#: What the self-contained file adds to the deployment picture's style.
EXTRA_STYLE = """
.help { color: #666; font-size: .85em; } h3 { font-size: 1em; margin-bottom: .3em; }
table.list { border-collapse: collapse; font-size: .9em; }
table.list td { border-bottom: 1px solid #eee; padding: 2px 8px; }
ol.plans li { margin-bottom: .3em; } strong.depends { color: #b35900; }
li.deleted, tr.removed td { color: #b00; }
"""


def document(plan: Mapping[str, Any]) -> str:
    """One self-contained HTML file of the plan."""
    heading = _esc(title(plan))
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{heading}</title>'
            f'<style>{STYLE}{EXTRA_STYLE}</style></head><body><h1>{heading}</h1>{fragment(plan)}'
            f'</body></html>\n')
