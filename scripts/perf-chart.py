#!/usr/bin/env python3
"""Chart and table of a side-by-side run of inlay and llama.cpp.

    scripts/perf-chart.py COMPARE.json --svg OUT.svg --md OUT.md

COMPARE.json is what scripts/perf-compare.sh writes. The SVG has one row per model and
two panels, prompt processing (pp) and generation (tg), each on its own tokens/s axis:
grouped bars inlay / llama.cpp per test, and on the tg tests a mark at the memory
roofline rate (read bandwidth / bytes read per generated token). The Markdown table has
per model and test both rates, their ratio and inlay's share of the roofline.
Python 3 standard library only.
"""

import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

INLAY_COLOR = "#2b6cb0"
LLAMA_COLOR = "#dd8452"
ROOF_COLOR = "#222222"

PANEL_W, PANEL_H = 420, 220  # PANEL_W at least: a panel widens to give each test GROUP_W
GROUP_W = 90
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 70, 20, 40, 50
TITLE_H, LEGEND_H = 60, 30


def test_key(t):
    return (t["n_prompt"], t["n_gen"], t.get("n_depth", 0))


def test_name(t):
    name = f"pp{t['n_prompt']}" if t["n_prompt"] else f"tg{t['n_gen']}"
    return name + (f" @ d{t['n_depth']}" if t.get("n_depth", 0) else "")


def paired_tests(model):
    """(name, is_pp, inlay test, llama.cpp test or None) in inlay's order."""
    llama = {test_key(t): t for t in model["llama_cpp"]["tests"]}
    return [(test_name(t), t["n_prompt"] > 0, t, llama.get(test_key(t))) for t in model["inlay"]["tests"]]


def ratio(a, b):
    return a / b if b else None


def nice_ticks(top):
    """About five round tick values from 0 to at least `top`."""
    if top <= 0:
        return [0, 1]
    raw = top / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    n = math.ceil(top / step)
    return [i * step for i in range(n + 1)]


def fmt_tick(v):
    return f"{v:g}" if v < 1e4 else f"{v / 1e3:g}k"


def roofline_ts(test, membw):
    """The test's roofline rate: its own (the bandwidth measured beside its rounds) where the
    report has one, else the report's bandwidth over its bytes per token; None without."""
    if test.get("roofline_ts"):
        return test["roofline_ts"]
    if membw and test.get("bytes_per_token"):
        return membw / test["bytes_per_token"]
    return None


def panel(x0, y0, width, title, rows, membw):
    """One panel `width` wide: grouped bars for `rows` (name, inlay test, llama test)."""
    out = []
    w, h = width - MARGIN_L - MARGIN_R, PANEL_H - MARGIN_T - MARGIN_B
    left, top = x0 + MARGIN_L, y0 + MARGIN_T
    values = []
    for _, it, lt in rows:
        values.append(it["median_ts"])
        if lt:
            values.append(lt["median_ts"])
        if roofline_ts(it, membw):
            values.append(roofline_ts(it, membw))
    ticks = nice_ticks(max(values) if values else 1)
    ymax = ticks[-1]
    y = lambda v: top + h - (v / ymax) * h
    out.append(f'<text x="{x0 + width / 2}" y="{y0 + 22}" text-anchor="middle" font-size="14" '
               f'font-weight="bold">{escape(title)}</text>')
    for t in ticks:
        out.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{left + w}" y2="{y(t):.1f}" stroke="#dddddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end" font-size="11">{fmt_tick(t)}</text>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + h}" stroke="#444444"/>')
    out.append(f'<line x1="{left}" y1="{top + h}" x2="{left + w}" y2="{top + h}" stroke="#444444"/>')
    out.append(f'<text x="{x0 + 16}" y="{top + h / 2}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 {x0 + 16} {top + h / 2})">tokens/s</text>')
    group = w / max(len(rows), 1)
    bar = min(group * 0.35, 40)
    for i, (name, it, lt) in enumerate(rows):
        cx = left + group * (i + 0.5)
        bars = [(it["median_ts"], INLAY_COLOR, "inlay")]
        if lt:
            bars.append((lt["median_ts"], LLAMA_COLOR, "llama.cpp"))
        for j, (v, color, who) in enumerate(bars):
            bx = cx - bar + j * bar
            out.append(f'<rect x="{bx:.1f}" y="{y(v):.1f}" width="{bar:.1f}" height="{top + h - y(v):.1f}" '
                       f'fill="{color}"><title>{escape(name)} {who}: {v:.1f} t/s</title></rect>')
        r = ratio(it["median_ts"], lt["median_ts"]) if lt else None
        label = f"{r:.2f}x" if r is not None else "n/a"
        peak = max(v for v, _, _ in bars)
        out.append(f'<text x="{cx:.1f}" y="{y(peak) - 4:.1f}" text-anchor="middle" font-size="10">{label}</text>')
        if roofline_ts(it, membw):
            roof = roofline_ts(it, membw)
            out.append(f'<line x1="{cx - bar - 4:.1f}" y1="{y(roof):.1f}" x2="{cx + bar + 4:.1f}" y2="{y(roof):.1f}" '
                       f'stroke="{ROOF_COLOR}" stroke-width="2" stroke-dasharray="4 2">'
                       f'<title>{escape(name)} memory roofline: {roof:.1f} t/s</title></line>')
        out.append(f'<text x="{cx:.1f}" y="{top + h + 16}" text-anchor="middle" font-size="11">{escape(name)}</text>')
    return out


def svg_chart(report):
    models = report["models"]
    membw = report.get("membw_bytes_per_s")
    most = max([sum(1 for _, is_pp, _, _ in paired_tests(m) if is_pp == kind) for m in models for kind in (True, False)])
    panel_w = max(PANEL_W, MARGIN_L + MARGIN_R + GROUP_W * most)
    width = 2 * panel_w
    height = TITLE_H + LEGEND_H + PANEL_H * len(models) + 30 * len(models)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    llama = report.get("llama_cpp", {})
    title = f"inlay vs llama.cpp ({llama.get('build_commit') or 'unknown build'}), {report['threads']} threads"
    sub = f"{report.get('date', '')}  {report.get('cpu') or report.get('host', '')}"
    if membw:
        sub += f"  read bandwidth {membw / 1e9:.1f} GB/s"
        low, high = report.get("membw_range") or (membw, membw)
        if high > low * 1.05:
            sub += f" (median; {low / 1e9:.1f}-{high / 1e9:.1f} over the rounds)"
    sub += f"  medians of {report.get('rounds', '?')} interleaved rounds"
    out.append(f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">'
               f'{escape(title)}</text>')
    out.append(f'<text x="{width / 2}" y="44" text-anchor="middle" font-size="11">{escape(sub)}</text>')
    ly = TITLE_H + 10
    legend = [("rect", INLAY_COLOR, "inlay"), ("rect", LLAMA_COLOR, "llama.cpp"),
              ("line", ROOF_COLOR, "memory roofline (read bandwidth / bytes per token)")]
    lx = 80
    for kind, color, label in legend:
        if kind == "rect":
            out.append(f'<rect x="{lx}" y="{ly}" width="14" height="14" fill="{color}"/>')
        else:
            out.append(f'<line x1="{lx}" y1="{ly + 7}" x2="{lx + 14}" y2="{ly + 7}" stroke="{color}" '
                       f'stroke-width="2" stroke-dasharray="4 2"/>')
        out.append(f'<text x="{lx + 20}" y="{ly + 12}" font-size="12">{escape(label)}</text>')
        lx += 40 + 7 * len(label)
    out.append(f'<text x="{width - 10}" y="{ly + 12}" text-anchor="end" font-size="11">'
               f'labels: inlay / llama.cpp</text>')
    for m_i, model in enumerate(models):
        y0 = TITLE_H + LEGEND_H + m_i * (PANEL_H + 30)
        out.append(f'<text x="10" y="{y0 + 16}" font-size="13" font-weight="bold">{escape(model["name"])}</text>')
        pairs = paired_tests(model)
        pp = [(n, it, lt) for n, is_pp, it, lt in pairs if is_pp]
        tg = [(n, it, lt) for n, is_pp, it, lt in pairs if not is_pp]
        out += panel(0, y0 + 10, panel_w, "prompt processing", pp, None)
        out += panel(panel_w, y0 + 10, panel_w, "generation", tg, membw)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def markdown_table(report):
    lines = ["| model | test | inlay t/s | llama.cpp t/s | inlay / llama.cpp | inlay share of roofline |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for model in report["models"]:
        for name, _, it, lt in paired_tests(model):
            r = ratio(it["median_ts"], lt["median_ts"]) if lt else None
            share = it.get("roofline_share")
            lines.append("| {} | {} | {:.2f} | {} | {} | {} |".format(
                model["name"], name, it["median_ts"], f"{lt['median_ts']:.2f}" if lt else "n/a",
                f"{r:.2f}x" if r is not None else "n/a", f"{100 * share:.0f}%" if share is not None else ""))
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description="Chart and table of scripts/perf-compare.sh's JSON.")
    ap.add_argument("compare_json")
    ap.add_argument("--svg", help="write the chart here")
    ap.add_argument("--md", help="write the Markdown table here (default: print it)")
    args = ap.parse_args(argv)
    try:
        with open(args.compare_json) as f:
            report = json.load(f)
        if not report.get("models"):
            raise ValueError("no models in the report")
        svg = svg_chart(report)
        table = markdown_table(report)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"perf-chart: {args.compare_json}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(svg)
    if args.md:
        with open(args.md, "w") as f:
            f.write(table)
    else:
        sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
