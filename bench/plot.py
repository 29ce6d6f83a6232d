#!/usr/bin/env python3
"""Plots and tabulates the JSON of bench/cuda_bench.cu (--json) and bench/peers.py.

    python3 bench/plot.py bench.json peers.json --png bench.png --markdown table.md

The PNG: fraction of the copy floor (%) against T (log scale) for the (8, 1536, T) bdt cases, one line
per (impl, case, dtype), parascan solid and the others dashed, a line at 100%; device, commit and date
in the title. The markdown (printed, and written with --markdown): those cases side by side, one row per
(case, dtype) for parascan and one for the best peer at each T (ms and % of copy), then every other case.
Needs matplotlib for the PNG only.
"""
import argparse
import datetime
import json
import sys

GRID_B, GRID_D = 8, 1536
SHORT = {"parascan": "parascan", "accelerated-scan-cuda": "AS CUDA", "accelerated-scan-triton": "AS Triton",
         "cub": "CUB"}


def load(paths):
    records = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, list):
            sys.exit("%s: expected a JSON list of records" % path)
        records += [r for r in data if isinstance(r, dict)]
    return records


def on_grid(r):
    """The (8, 1536, T) bdt cases (not the policy sweep, not the copy kernels)."""
    shape = r.get("shape") or []
    return (r.get("layout") == "bdt" and len(shape) == 3 and shape[0] == GRID_B and shape[1] == GRID_D
            and r.get("impl") != "copy" and not r.get("policy"))


def fraction(r):
    f = r.get("fraction_of_copy")
    return f if r.get("status") == "ok" and isinstance(f, (int, float)) else None


def title_of(records):
    devices = sorted({r.get("device", "?") for r in records if r.get("device")})
    commits = sorted({r.get("commit", "?") for r in records if r.get("commit")})
    copies = sorted({round(r["copy_gbs"]) for r in records if isinstance(r.get("copy_gbs"), (int, float))})
    return "%s, commit %s, %s; copy floor %s GB/s" % (
        " / ".join(devices) or "unknown device", " / ".join(commits) or "unknown",
        datetime.date.today().isoformat(), " / ".join(str(c) for c in copies) or "?")


def plot(records, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = {}
    for r in records:
        if on_grid(r) and fraction(r) is not None:
            lines.setdefault((r["impl"], r["case"], r["dtype"]), []).append((r["T"], 100 * fraction(r)))
    fig, ax = plt.subplots(figsize=(13, 6.5))
    colors = plt.get_cmap("tab20").colors
    ordered = sorted(lines.items(), key=lambda kv: (kv[0][0] != "parascan", kv[0]))
    count = {True: 0, False: 0}
    for (impl, case, dtype), points in ordered:
        mine = impl == "parascan"  # parascan in tab20's dark shades, the others in its light ones
        color = colors[(2 * count[mine] + (0 if mine else 1)) % len(colors)]
        count[mine] += 1
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o" if impl == "parascan" else "s",
                linestyle="-" if impl == "parascan" else "--", linewidth=1.8 if impl == "parascan" else 1.2,
                markersize=4, color=color,
                label="%s: %s %s" % (SHORT.get(impl, impl), case, dtype))
    ax.axhline(100, color="black", linewidth=1, linestyle=":", label="copy floor")
    ax.set_xscale("log", base=2)
    Ts = sorted({r["T"] for r in records if on_grid(r)})
    pow2 = [T for T in Ts if T & (T - 1) == 0]
    other = [T for T in Ts if T & (T - 1) != 0]
    ax.set_xticks(pow2)
    ax.set_xticklabels([str(t) for t in pow2])
    ax.set_xticks(other, minor=True)  # lengths that are not powers of two: labelled below the others
    ax.set_xticklabels([str(t) for t in other], minor=True, fontsize=7, color="dimgray")
    ax.tick_params(axis="x", which="minor", pad=16)
    ax.set_xlabel("T (sequence length), shape (8, 1536, T), time contiguous")
    ax.set_ylabel("% of the copy floor (bytes a scan must move / copy bandwidth)")
    ax.set_ylim(0, max([110] + [p[1] * 1.05 for pts in lines.values() for p in pts]))
    ax.grid(True, alpha=0.3)
    ax.set_title(title_of(records), fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(png, dpi=130)
    plt.close(fig)


def cell(r, with_impl=False):
    if r is None:
        return ""
    if r.get("status") != "ok":
        text = r.get("status", "?")
    else:
        f = fraction(r)
        text = "%.4g ms, %s" % (r["ms"], ("%.0f%%" % (100 * f)) if f is not None else "-")
    return text + (" (%s)" % SHORT.get(r["impl"], r["impl"]) if with_impl else "")


def best_peer(candidates):
    ok = [r for r in candidates if fraction(r) is not None]
    if ok:
        return max(ok, key=fraction)
    return candidates[0] if candidates else None


def markdown(records):
    out = ["# " + title_of(records), ""]
    grid = [r for r in records if on_grid(r)]
    Ts = sorted({r["T"] for r in grid})
    rows = sorted({(r["case"], r["dtype"]) for r in grid},
                  key=lambda k: (k[0] != "linear_recurrence", k[0], ["fp32", "bf16", "fp16", "complex64"].index(k[1])
                                 if k[1] in ("fp32", "bf16", "fp16", "complex64") else 9, k[1]))
    if grid:
        out += ["## (8, 1536, T), time contiguous: ms, % of the copy floor", "",
                "| case | impl | " + " | ".join(str(T) for T in Ts) + " |",
                "|---|---|" + "---|" * len(Ts)]
        for case, dtype in rows:
            mine = {r["T"]: r for r in grid if r["impl"] == "parascan" and (r["case"], r["dtype"]) == (case, dtype)}
            peers = {}
            for r in grid:
                if r["impl"] != "parascan" and (r["case"], r["dtype"]) == (case, dtype):
                    peers.setdefault(r["T"], []).append(r)
            out.append("| %s %s | parascan | %s |" % (case, dtype, " | ".join(cell(mine.get(T)) for T in Ts)))
            if peers:
                out.append("| | best peer | %s |" % " | ".join(cell(best_peer(peers.get(T, [])), True) for T in Ts))
        out.append("")
    others = [r for r in records if not on_grid(r) and r.get("impl") != "copy"]
    if others:
        out += ["## Other cases", "", "| impl | case | dtype | layout | shape | ms | GB/s | % of copy | status |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in others:
            f = fraction(r)
            name = r["case"] + (" " + r["policy"] if r.get("policy") else "")
            out.append("| %s | %s | %s | %s | (%s) | %s | %s | %s | %s |" % (
                r["impl"], name, r["dtype"], r["layout"], ",".join(str(s) for s in r.get("shape", [])),
                "%.4g" % r["ms"] if r.get("status") == "ok" else "-",
                "%.0f" % r["gbs"] if r.get("status") == "ok" else "-",
                "%.0f%%" % (100 * f) if f is not None else "-",
                r["status"] + (": " + r["note"] if r.get("note") and r["status"] != "ok" else "")))
        out.append("")
    copies = [r for r in records if r.get("impl") == "copy"]
    if copies:
        best = max(copies, key=lambda r: r["gbs"])
        out.append("Copy floor: %.0f GB/s (read + write), the fastest of %d copies (%s)." % (
            best["gbs"], len(copies), best["case"].replace("copy: ", "")))
    peers_copy = sorted({round(r["torch_copy_gbs"]) for r in records if isinstance(r.get("torch_copy_gbs"), (int, float))})
    if peers_copy:
        out.append("Torch copy (clone / copy_ of 2 GiB) in the peers' run: %s GB/s." % " / ".join(map(str, peers_copy)))
    out.append("AS = accelerated-scan (PyPI); % of copy = effective GB/s (each input read once, each output "
               "written once) / the copy floor; refused = the kernel does not take that length.")
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", nargs="+", help="JSON files from cuda_bench (--json) and peers.py (--json)")
    p.add_argument("--png", help="write the plot here")
    p.add_argument("--markdown", help="write the markdown tables here (they are printed too)")
    args = p.parse_args(argv)
    records = load(args.json)
    if args.png:
        plot(records, args.png)
    text = markdown(records)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
