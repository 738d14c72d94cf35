#!/usr/bin/env python3
"""The record's table: renders a record TSV (bench/record.tsv, or the one record.sh
writes) as Markdown and as one self-contained HTML page with charts, and compares
each row with a previous record, flagging a move beyond the row's noise.

usage: table.py NEW.tsv [--previous OLD.tsv] [--md OUT.md] [--html OUT.html]
                [--reports DIR] [--write-tsv OUT.tsv] [--fail-on-move]

NEW.tsv may hold only what a run measured (id, value, peer, commit, date, machine,
command, report, note: record.sh's values.tsv); a row's metadata (workload, figure,
unit, better, noise_pct) is then the previous record's row of the same id.
--write-tsv writes NEW with that metadata filled in: the next bench/record.tsv.

A row's noise_pct is how far two runs of the same binary on the same machine differ
for that figure (set from the spread seen in earlier runs: ~15-25 % for CPU per
delivery on a shared 2-core VM, 30-50 % for p99 latencies, ~5-10 % for memory, 0 for
counts that must not move). A move is flagged when |new - old| / old exceeds it, or,
for a row whose noise is 0, whenever the value differs. Rows measured in --quick
mode (machine column starting with "quick") are compared with nothing: a smoke test
is not a figure.
"""
import argparse
import csv
import html
import os
import sys

COLUMNS = ["id", "workload", "figure", "value", "unit", "better", "noise_pct", "peer",
           "commit", "date", "machine", "command", "report", "note"]


META = ["workload", "figure", "unit", "better", "noise_pct"]


def read(path, meta=None):
    """Rows of a record TSV; columns it lacks come from meta (id -> row), else defaults."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    for r in rows:
        for c in COLUMNS:
            if r.get(c) is None:
                known = (meta or {}).get(r["id"])
                if known is not None and c in META:
                    r[c] = known[c]
                else:
                    r[c] = {"workload": r["id"], "figure": r["id"], "better": "higher",
                            "noise_pct": "0"}.get(c, "")
        try:
            r["value_f"] = float(r["value"]) if r["value"] not in ("", "-") else None
        except ValueError:
            r["value_f"] = None
        r["noise_f"] = float(r["noise_pct"] or 0)
    return rows


def fmt_value(r):
    v = r["value_f"]
    if v is None:
        return "—" if r["value"] in ("", "-") else r["value"]
    if abs(v) >= 1e6:
        s = f"{v / 1e6:.2f} M"
    elif abs(v) >= 1000 or float(v).is_integer():
        s = f"{v:,.0f}"
    else:
        s = f"{v:.3g}"
    return f"{s} {r['unit']}".strip()


def move(new, old):
    """(text, flagged, direction) for new against old (None when not comparable)."""
    if old is None or new["value_f"] is None or old["value_f"] is None:
        return ("new row" if old is None else "—", False, "")
    if new["machine"].startswith("quick"):
        return ("smoke test", False, "")
    a, b = new["value_f"], old["value_f"]
    if b == 0:
        pct = 0.0 if a == 0 else float("inf")
    else:
        pct = (a - b) / abs(b) * 100
    noise = new["noise_f"]
    flagged = (a != b) if noise == 0 else abs(pct) > noise
    better = (a > b) if new["better"] == "higher" else (a < b)
    direction = "" if a == b else ("better" if better else "worse")
    text = f"{pct:+.1f} % (noise {noise:g} %)"
    if flagged:
        text = f"**MOVED {direction}** " + text
    return (text, flagged, direction)


def link(report, base):
    if not report:
        return ""
    target = os.path.join(base, report) if base else report
    return f"[{os.path.basename(report)}]({target})"


def markdown(rows, prev, base, compare):
    """The table; the last column (the move against the previous record) only when
    there is a previous record to compare with."""
    out = ["| workload | figure | value | peer | commit | date | machine | command | report |"
           + (" vs previous |" if compare else ""),
           "|---|---|---:|---|---|---|---|---|---|" + ("---|" if compare else "")]
    for r in rows:
        note = f" ({r['note']})" if r["note"] else ""
        cells = [r["workload"], r["figure"] + note, fmt_value(r), r["peer"] or "—",
                 f"`{r['commit']}`" if r["commit"] not in ("", "-") else "—",
                 r["date"] if r["date"] not in ("", "-") else "—", r["machine"], f"`{r['command']}`" if r["command"] else "",
                 link(r["report"], base)]
        if compare:
            cells.append(move(r, prev.get(r["id"]))[0])
        out.append("| " + " | ".join(cells).replace("\n", " ") + " |")
    return "\n".join(out) + "\n"


def bar_chart(r, old):
    """Two horizontal bars, previous and new, on one scale; inline SVG."""
    vals = [("previous", old["value_f"] if old else None), ("new", r["value_f"])]
    top = max([v for _, v in vals if v is not None] + [1e-9])
    parts = ['<svg width="260" height="44" xmlns="http://www.w3.org/2000/svg">']
    for i, (label, v) in enumerate(vals):
        y = 4 + i * 20
        parts.append(f'<text x="0" y="{y + 12}" font-size="11">{label}</text>')
        if v is not None:
            w = max(1, int(150 * v / top))
            colour = "#999" if label == "previous" else "#2b6cb0"
            parts.append(f'<rect x="58" y="{y}" width="{w}" height="14" fill="{colour}"/>')
            parts.append(f'<text x="{62 + w}" y="{y + 12}" font-size="11">{html.escape(f"{v:g}")}</text>')
    parts.append("</svg>")
    return "".join(parts)


def page(rows, prev, base):
    e = html.escape
    body = []
    for r in rows:
        old = prev.get(r["id"])
        text, flagged, direction = move(r, old)
        style = ' style="background:#fde2e2"' if flagged and direction == "worse" else (
            ' style="background:#e2f5e2"' if flagged else "")
        rep = r["report"]
        href = os.path.join(base, rep) if base and rep else rep
        anchor = f'<a href="{e(href)}">{e(os.path.basename(rep))}</a>' if rep else ""
        body.append(
            f"<tr{style}><td>{e(r['workload'])}</td><td>{e(r['figure'])}"
            f"{'<br><small>' + e(r['note']) + '</small>' if r['note'] else ''}</td>"
            f"<td class=n>{e(fmt_value(r))}</td><td>{e(r['peer'] or '—')}</td>"
            f"<td>{bar_chart(r, old)}</td><td>{e(text.replace('**', ''))}</td>"
            f"<td><code>{e(r['commit'])}</code><br>{e(r['date'])}</td><td>{e(r['machine'])}</td>"
            f"<td><code>{e(r['command'])}</code></td>"
            f"<td>{anchor}</td></tr>")
    return f"""<!doctype html><meta charset="utf-8"><title>Parley: the record</title>
<style>body{{font:13px sans-serif;margin:1em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 6px;vertical-align:top}}td.n{{text-align:right;white-space:nowrap}}
code{{font-size:11px}}</style>
<h1>Parley: the record</h1>
<p>One row per figure; the bars compare it with the previous record (grey). Red: moved
worse beyond the row's noise; green: moved better beyond it. Each report links the
run's own page (latency percentiles, throughput, CPU and RSS over time).</p>
<table><tr><th>workload</th><th>figure</th><th>value</th><th>peer</th><th>against previous</th>
<th>move</th><th>commit, date</th><th>machine</th><th>command</th><th>report</th></tr>
{''.join(body)}</table>
"""


def check(results_md, rows, base):
    """The committed page against the committed record: one table, one source."""
    text = open(results_md).read()
    start, end = "<!-- record table", "<!-- end record table"
    if start not in text or end not in text:
        print(f"{results_md}: no record table markers", file=sys.stderr)
        return 1
    a = text.index("\n", text.index(start)) + 1
    table = text[a:text.index(end)]
    bad = 0
    if table != markdown(rows, {}, base, False):
        print(f"{results_md}: the table is not bench/record.tsv's rendering "
              f"(python3 bench/record/table.py bench/record.tsv --reports {base})", file=sys.stderr)
        bad = 1
    here = os.path.dirname(os.path.abspath(results_md))
    for r in rows:
        if r["report"] and not os.path.exists(os.path.join(here, base, r["report"])):
            print(f"{results_md}: {r['id']}'s report {r['report']} is not in {base}/", file=sys.stderr)
            bad = 1
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("new")
    ap.add_argument("--previous")
    ap.add_argument("--md")
    ap.add_argument("--html")
    ap.add_argument("--reports", default="", help="prefix for report links")
    ap.add_argument("--write-tsv")
    ap.add_argument("--check", metavar="RESULTS.md",
                    help="exit 1 unless RESULTS.md's table is NEW's rendering and every "
                         "report it names exists (under --reports, relative to RESULTS.md)")
    ap.add_argument("--fail-on-move", action="store_true",
                    help="exit 1 when a row moved worse beyond its noise")
    a = ap.parse_args()
    prev = {r["id"]: r for r in read(a.previous)} if a.previous else {}
    rows = read(a.new, prev)
    if a.check:
        return check(a.check, rows, a.reports)
    if a.write_tsv:
        with open(a.write_tsv, "w") as f:
            f.write("\t".join(COLUMNS) + "\n")
            for r in rows:
                f.write("\t".join(r[c].replace("\t", " ") for c in COLUMNS) + "\n")
    md = markdown(rows, prev, a.reports, bool(a.previous))
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    else:
        sys.stdout.write(md)
    if a.html:
        with open(a.html, "w") as f:
            f.write(page(rows, prev, a.reports))
    worse = [r["id"] for r in rows if move(r, prev.get(r["id"]))[1:] == (True, "worse")]
    for w in worse:
        print(f"record: {w} moved worse beyond its noise", file=sys.stderr)
    return 1 if (worse and a.fail_on_move) else 0


if __name__ == "__main__":
    sys.exit(main())
