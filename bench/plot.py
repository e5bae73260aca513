"""Plots a benchmark JSON of bench_split_linear.py (and, optionally, the real
model report of ``examples/real_models.py``) as a PNG: time per call relative to the
fused GEMM, per shape and variant. Usage:
``python3 bench/plot.py bench.json [--models models.json] --out bench.png``."""

from __future__ import annotations

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

VARIANTS = ["fused", "eager_cat", "n_gemms", "slin_adjacent", "slin_disjoint"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("bench")
    parser.add_argument("--models")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    data = json.load(open(args.bench))
    results = data["results"]
    ncols = 2 if args.models else 1
    fig, axes = plt.subplots(1, ncols, figsize=(7 * ncols, 4.5), squeeze=False)
    ax = axes[0][0]
    width = 0.16
    labels = []
    for i, r in enumerate(results):
        parts = r["parts"]
        p = f"[{parts[0]}]x3" if len(set(parts)) == 1 else "[" + ",".join(str(x) for x in parts) + "]"
        labels.append(f"M={r['M']} K={r['K']}\n{p} {r['mode']}")
        for j, v in enumerate(VARIANTS):
            ax.bar(i + (j - 2) * width, r["ratio"][v], width, label=v if i == 0 else None,
                   color=f"C{j}")
    ax.axhline(1.03, color="k", linestyle="--", linewidth=0.8, label="target 1.03x")
    ax.set_xticks(range(len(results)), labels, fontsize=7)
    ax.set_ylabel("time per call / fused GEMM")
    ax.set_title(f"{data['device']}, {data['dtype']}, torch {data['torch']}", fontsize=9)
    ax.legend(fontsize=7)
    if args.models:
        models = json.load(open(args.models))["models"]
        ax2 = axes[0][1]
        names = []
        for i, m in enumerate(m_ for m_ in models):
            for k, shape in enumerate(("prefill", "decode")):
                t = m["times_ms"][shape]
                x = i * 2 + k
                names.append(f"{m['arch']}\n{shape}")
                for j, key in enumerate(("eager", "inductor", "splitlinear")):
                    ax2.bar(x + (j - 1) * 0.25, t[key], 0.25, color=f"C{j + 5}",
                            label=key if x == 0 else None)
        ax2.set_xticks(range(len(names)), names, fontsize=8)
        ax2.set_ylabel("forward time, ms (median)")
        ax2.set_title("real models (transformers configs, bf16)", fontsize=9)
        ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
