#!/usr/bin/env python3
"""Draws a cgc Chrome trace (cgc run --trace) as an SVG timeline: one row per
executor, one box per node, coloured by op, the last run only. For the README;
open the JSON itself in chrome://tracing or ui.perfetto.dev to explore it.

Usage: trace_svg.py TRACE.json OUT.svg [--title TEXT]
"""
import argparse
import colorsys
import hashlib
import json
from xml.sax.saxutils import escape

ROW_HEIGHT = 28
LEFT = 90
WIDTH = 960


def op_colour(op):
    hue = int(hashlib.md5(op.encode()).hexdigest()[:4], 16) / 65535
    r, g, b = colorsys.hls_to_rgb(hue, 0.62, 0.55)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def last_run(events):
    """Events of the last run, which starts with the last occurrence of the
    node that started the first run."""
    first_node = min(events, key=lambda e: e["ts"])["name"]
    run_starts = sorted(e["ts"] for e in events if e["name"] == first_node)
    begin = run_starts[-1]
    return [e for e in events if e["ts"] >= begin]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("out")
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    with open(args.trace) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    events = last_run(events)
    executors = sorted({e["tid"] for e in events})
    t0 = min(e["ts"] for e in events)
    t1 = max(e["ts"] + e["dur"] for e in events)
    scale = (WIDTH - LEFT - 20) / max(t1 - t0, 1e-9)
    top = 40 if args.title else 16
    ops = sorted({e["cat"] for e in events})
    legend_rows = (len(ops) + 5) // 6
    height = top + ROW_HEIGHT * len(executors) + 40 + 18 * legend_rows
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>']
    if args.title:
        out.append(f'<text x="{LEFT}" y="24" font-size="14">{escape(args.title)}</text>')
    for row, executor in enumerate(executors):
        y = top + row * ROW_HEIGHT
        out.append(f'<text x="8" y="{y + 18}">executor {executor}</text>')
        for e in (e for e in events if e["tid"] == executor):
            x = LEFT + (e["ts"] - t0) * scale
            w = max(e["dur"] * scale, 0.5)
            out.append(f'<rect x="{x:.2f}" y="{y + 4}" width="{w:.2f}" '
                       f'height="{ROW_HEIGHT - 8}" fill="{op_colour(e["cat"])}" '
                       f'stroke="#333" stroke-width="0.3"><title>{escape(e["name"])} '
                       f'({escape(e["cat"])}): {e["dur"]:.1f} us</title></rect>')
    axis = top + ROW_HEIGHT * len(executors) + 14
    out.append(f'<text x="{LEFT}" y="{axis}">0</text>')
    out.append(f'<text x="{WIDTH - 20}" y="{axis}" text-anchor="end">'
               f'{(t1 - t0) / 1000:.2f} ms</text>')
    for i, op in enumerate(ops):
        x = LEFT + (i % 6) * 140
        y = axis + 12 + (i // 6) * 18
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{op_colour(op)}"/>')
        out.append(f'<text x="{x + 16}" y="{y + 11}">{escape(op)}</text>')
    out.append("</svg>")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
