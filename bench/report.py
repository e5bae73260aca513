"""Renders the benchmark JSON (``bench/run.py``) into the tables of ``docs/Performance.md`` and plots.

Each table sits in the document between ``<!-- BEGIN name -->`` and ``<!-- END name -->``; this
replaces what is between the markers with the table rendered from ``RESULTS/<suite>.json`` (or a
line saying which command measures it, where that JSON is absent), and leaves the rest of the
document as it is. Plots (matplotlib, when installed) go to ``docs/img/``.

    python bench/report.py                               # DEFAULT_RESULTS -> docs/Performance.md, docs/img
    python bench/report.py --results DIR --doc OUT.md    # any results folder, any document
    python bench/report.py --results A B                 # a suite's JSON from A where A has it, else B
    python bench/report.py --check                       # exit 1 if a table differs from its JSON
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: The results the docs render from, one folder per GPU (its name); a suite comes from the first
#: folder that holds it, and each table names the GPU it was measured on.
DEFAULT_RESULTS: tuple[Path, ...] = (REPO / "bench" / "results" / "h100",)
DEFAULT_DOC = REPO / "docs" / "Performance.md"
DEFAULT_IMG = REPO / "docs" / "img"
MARKER = re.compile(r"(<!-- BEGIN (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- END (?P=name) -->)", re.S)

NAMES = {
    "eager_bf16": "eager bf16", "inductor_bf16": "Inductor bf16", "inductor_bf16_ro": "Inductor bf16 (reduce-overhead)",
    "splitlinear_bf16": "splitlinear bf16", "splitlinear_bf16_ro": "splitlinear bf16 (reduce-overhead)",
    "splitlinear_fp8": "splitlinear FP8 weights", "splitlinear_fp8_ro": "splitlinear FP8 weights (reduce-overhead)",
    "splitlinear_fp8_tw_ro": "splitlinear FP8 weights, per part (reduce-overhead)",
    "splitlinear_fp8_all_ro": "splitlinear FP8 weights + lm_head (reduce-overhead)",
    "splitlinear_fp8_gq_ro": "splitlinear FP8 weights, graph quantization (reduce-overhead)",
    "splitlinear_fp8_bw_ro": "splitlinear FP8 weights, 128x128 blocks (reduce-overhead)",
    "torchao_fp8_ro": "torchao FP8 weights (reduce-overhead)",
    "splitlinear_fp8_tensorwise": "splitlinear FP8 tensorwise", "splitlinear_fp8_rowwise": "splitlinear FP8 rowwise",
    "torchao_fp8_tensorwise": "torchao FP8 tensorwise", "torchao_fp8_rowwise": "torchao FP8 rowwise",
    "splitlinear_fp8_blockwise": "splitlinear FP8 blockwise",
    "torchao_fp8_blockwise": "torchao FP8 blockwise (prototype)",
}


def _name(variant: str) -> str:
    return NAMES.get(variant, variant)


def _f(v: Any, digits: int = 3) -> str:
    return f"{v:.{digits}f}" if isinstance(v, (int, float)) else "—"


def _x(num: Any, den: Any) -> str:
    """``num / den`` as a speedup (``den`` the variant's time, ``num`` the reference's)."""
    return f"{num / den:.2f}×" if isinstance(num, (int, float)) and isinstance(den, (int, float)) and den else "—"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _command(suite: str) -> str:
    return f"Reproduce: `python bench/run.py --suite {suite} --out bench/results/<gpu>`, then `python bench/report.py`."


def _footer(data: dict[str, Any]) -> list[str]:
    """One line under each table: status when not ok, what was not measured, the command."""
    parts = []
    env = data.get("environment", {})
    if env and not data.get("quick"):
        build = env.get("wheel", f"commit {env.get('commit')}")
        parts.append(f"Measured on {env.get('gpu')}, {str(env.get('date', ''))[:10]}, wheel built from {build}.")
    if data.get("status") != "ok":
        parts.append(f"Status: {data.get('status')} ({data.get('reason', '')}).")
    if data.get("quick"):
        parts.append("A `--quick` smoke run on the CPU: the numbers say nothing about speed.")
    if data.get("skipped"):
        parts.append("Not measured: " + "; ".join(data["skipped"]) + ".")
    return [" ".join(parts + [_command(data["suite"])])]


# ----------------------------------------------------------------------------------------------
# Tables, one function per marker name: data of the suites it needs -> markdown lines.


#: Whose environment the setup block shows: the GPU suites first (``accuracy`` runs on the CPU).
SETUP_ORDER = ("train", "serve", "generate", "op", "fp8-op", "host", "grads", "dist", "accuracy")


def table_setup(suites: dict[str, dict]) -> list[str]:
    env = next((suites[n]["environment"] for n in SETUP_ORDER if "environment" in suites.get(n, {})), None)
    if env is None:
        return []
    clock = env.get("sm_clock_mhz")
    clock_s = f"{clock['current']}/{clock['max']} MHz" if isinstance(clock, dict) else str(clock)
    return ["```",
            f"GPU           {env.get('gpu')} (SM clock at start {clock_s}), driver {env.get('driver')}",
            f"software      CUDA {env.get('cuda')}, cuBLASLt {env.get('cublaslt')}, torch {env.get('torch')}, "
            f"torchao {env.get('torchao')}, transformers {env.get('transformers')}",
            f"splitlinear   wheel built from {env.get('wheel', 'n/a')}; bench/ at commit {env.get('commit')}; "
            f"measured {env.get('date')}",
            f"command       {env.get('command')}",
            *_other_gpus(suites, env.get("gpu")),
            "```"]


def _other_gpus(suites: dict[str, dict], gpu: Any) -> list[str]:
    """A line naming the suites measured on another GPU than the setup block's (each table says so too)."""
    others: dict[str, list[str]] = {}
    for name in SETUP_ORDER:
        other = suites.get(name, {}).get("environment", {}).get("gpu")
        # CPU suites (accuracy) say so in their own table.
        if other and other != gpu and not str(other).startswith("none") and not suites[name].get("quick"):
            others.setdefault(other, []).append(name)
    return [f"also          {', '.join(names)} measured on {other}" for other, names in others.items()]


def table_train(suites: dict[str, dict]) -> list[str]:
    data = suites["train"]
    cfg = data.get("config", {})
    out = [f"Training step: {cfg.get('layers')} decoder layers, {cfg.get('batch')}×{cfg.get('seq')} tokens, "
           f"vocabulary {cfg.get('vocab')}, bf16 parameters, AdamW; median of the last {cfg.get('timed')} steps; "
           f"loss gap: largest relative difference of any step's loss to Inductor bf16's over "
           f"{cfg.get('steps')} steps (first model).", ""]
    rows = []
    for r in data.get("results", []):
        ref = next((q for q in data["results"] if q["model"] == r["model"] and q["variant"] == r["reference"]), r)
        peak = r.get("peak_mib")
        rows.append([r["model"], _name(r["variant"]), _f(r["step_ms"], 2), _x(ref["step_ms"], r["step_ms"]),
                     f"{r['tokens_per_s']:,.0f}", _f(r["first_step_s"], 1),
                     _f(peak / 1024, 2) if isinstance(peak, (int, float)) else "—", f"{r['max_loss_rel_gap']:.1e}"])
    refs = {r["reference"] for r in data.get("results", [])}
    out += _table(["model", "variant", "step ms", f"× {_name(refs.pop()) if len(refs) == 1 else 'reference'}",
                   "tokens/s", "first step s", "peak GiB", "loss gap"], rows)
    return out + [""] + _footer(data)


def table_decode(suites: dict[str, dict]) -> list[str]:
    data = suites["serve"]
    cfg = data.get("config", {})
    rows_in = data.get("results", [])
    ref = next((r for r in rows_in if r["variant"] == "inductor_bf16_ro"), None) or next(
        (r for r in rows_in if r["variant"] == "inductor_bf16"), None) or (rows_in[0] if rows_in else None)
    out = [f"Decode: no-cache forward of {'×'.join(map(str, cfg.get('decode', [])))} tokens, "
           f"{cfg.get('layers')} layers of {cfg.get('model')}, ms per step; floor: the weights read once at "
           f"{cfg.get('floor_bytes_per_s', 0) / 1e12:.1f} TB/s. Reference: {_name(ref['variant']) if ref else '—'}.", ""]
    rows = []
    for r in rows_in:
        d = r["decode"]
        peak = d.get("peak_mib")
        rows.append([_name(r["variant"]), _f(d["ms"]), _x(ref["decode"]["ms"], d["ms"]) if ref else "—",
                     _f(r.get("floor_ms")), _f(d["first_call_s"], 1),
                     _f(peak / 1024, 2) if isinstance(peak, (int, float)) else "—"])
    out += _table(["variant", "decode ms", "× reference", "weight-read floor ms", "first call s", "peak GiB"], rows)
    return out + [""] + _footer(data)


def r0_new(data: dict[str, Any]) -> Any:
    """New tokens per sequence of the first generate row (the CPU smoke run makes fewer)."""
    return next((g["new_tokens"] for r in data.get("results", []) for g in r.get("generate", [])), "?")


def table_generate(suites: dict[str, dict]) -> list[str]:
    data = suites["generate"]
    cfg = data.get("config", {}).get("generate", {})
    batches = cfg.get("batches", [1, 16])
    out = [f"HF `generate`, static cache, compiled with `reduce-overhead` through `compile_config`: "
           f"{cfg.get('prompt')}-token prompt, {r0_new(data)} new tokens, tokens/s (best of 2 after "
           f"the compiling call).", ""]
    rows = []
    for r in data.get("results", []):
        if not r.get("generate"):
            continue
        by_batch = {g["batch"]: g for g in r["generate"]}
        rows.append([_name(r["variant"])] + [f"{by_batch[b]['tokens_per_s']:,.0f}" if b in by_batch else "—"
                                             for b in batches]
                    + [_f(r["generate"][0]["first_generate_s"], 1)])
    if not rows:
        return out + ["No `generate` rows in this run."] + [""] + _footer(data)
    out += _table(["variant"] + [f"batch {b} tokens/s" for b in batches] + ["first generate s"], rows)
    return out + [""] + _footer(data)


def table_prefill(suites: dict[str, dict]) -> list[str]:
    data = suites["serve"]
    rows_in = [r for r in data.get("results", []) if "prefill" in r]
    ref = next((r for r in rows_in if r["variant"] == "inductor_bf16"), rows_in[0] if rows_in else None)
    shape = "×".join(map(str, data.get("config", {}).get("prefill", [])))
    out = [f"Prefill: no-cache forward of {shape} tokens, default compile mode, ms.", ""]
    rows = [[_name(r["variant"]), _f(r["prefill"]["ms"]), _x(ref["prefill"]["ms"], r["prefill"]["ms"]),
             f"{r['prefill']['tokens_per_s']:,.0f}", _f(r["prefill"]["first_call_s"], 1)] for r in rows_in]
    if not rows:
        return out + ["No prefill rows in this run."] + [""] + _footer(data)
    out += _table(["variant", "prefill ms", f"× {_name(ref['variant']) if ref else '—'}", "tokens/s",
                   "first call s"], rows)
    return out + [""] + _footer(data)


def table_op(suites: dict[str, dict]) -> list[str]:
    data = suites["op"]
    peers = ["fused", "eager_cat", "n_gemms", "inductor"]
    out = ["bf16 split linear, forward: the op's time on packed parts (ms) and each alternative's time over it "
           "(× > 1: the op is faster). `fused`: one pre-concatenated weight, the floor; `eager_cat`: `torch.cat` + "
           "`F.linear` every call; `n_gemms`: one `F.linear` per part; `inductor`: `torch.compile` of the eager "
           "cat; `separate parts`: the op on separately allocated parts (copy or per-part GEMMs). Training rows "
           "(forward + backward) are in the JSON.", ""]
    rows = []
    for r in data.get("results", []):
        if r["mode"] != "infer":
            continue
        ms = r["ms"]
        ours = ms["slin_adjacent"]
        rows.append([r["shape"], str(r["M"]), _f(ours, 4)] + [_x(ms.get(c), ours) for c in peers]
                    + [_x(ms.get("slin_disjoint"), ours)])
    out += _table(["shape", "M", "splitlinear ms", *[f"{c} ×" for c in peers], "separate parts ×"], rows)
    return out + [""] + _footer(data)


def table_fp8_op(suites: dict[str, dict]) -> list[str]:
    data = suites["fp8-op"]
    out = ["FP8 split linear: the bf16 op's time (ms) and each FP8 variant's speedup over it (×, higher is "
           "better), quantization included; `fwd` forward, `train` forward + backward. `per-part _scaled_mm`: "
           "one `torch._scaled_mm` per part (forward); torchao at M = "
           f"{data.get('config', {}).get('torchao_rows')} only.", ""]
    by_key: dict[tuple[str, int], dict[str, Any]] = {}
    for r in data.get("results", []):
        by_key.setdefault((r["shape"], r["M"]), {})[r["mode"]] = r
    rows = []
    for (shape, m), modes in by_key.items():
        f, t = modes.get("fwd", {}), modes.get("fwd+bwd", {})
        rows.append([shape, str(m), _f(f.get("bf16"), 4), _x(f.get("bf16"), f.get("slin_tensorwise")),
                     _x(f.get("bf16"), f.get("slin_rowwise")), _x(f.get("bf16"), f.get("slin_blockwise")),
                     _x(f.get("bf16"), f.get("scaled_mm_per_part")),
                     _f(t.get("bf16"), 4), _x(t.get("bf16"), t.get("slin_tensorwise")),
                     _x(t.get("bf16"), t.get("slin_rowwise")), _x(t.get("bf16"), t.get("slin_blockwise")),
                     _x(t.get("bf16"), t.get("torchao_tensorwise")), _x(t.get("bf16"), t.get("torchao_rowwise"))])
    out += _table(["shape", "M", "fwd bf16 ms", "tensorwise ×", "rowwise ×", "blockwise ×", "per-part _scaled_mm ×",
                   "train bf16 ms", "tensorwise ×", "rowwise ×", "blockwise ×", "torchao tensorwise ×",
                   "torchao rowwise ×"], rows)
    return out + [""] + _footer(data)


def table_host(suites: dict[str, dict]) -> list[str]:
    data = suites["host"]
    cfg = data.get("config", {})
    out = [f"Host time per call, x {cfg.get('x')}, parts {cfg.get('parts')} ({cfg.get('device')}), µs, median "
           f"of {cfg.get('runs')} runs of back-to-back calls.", ""]
    out += _table(["case", "µs per call"], [[r["case"], _f(r["us_per_call"], 1)] for r in data.get("results", [])])
    return out + [""] + _footer(data)


def table_dist(suites: dict[str, dict]) -> list[str]:
    data = suites["dist"]
    if data.get("status") == "skipped":
        return [f"Not measured: {data.get('reason')}.", "", _command("dist")]
    rows = []
    for r in data.get("results", []):
        steps = r.get("steps", [])
        gap = max((abs(s["loss_inductor"] - s["loss_splitlinear"]) / abs(s["loss_inductor"]) for s in steps),
                  default=float("nan"))
        err = max((s["max_grad_rel_err"] for s in steps), default=float("nan"))
        rows.append([r["wrapper"], str(len(steps)), f"{gap:.1e}", f"{err:.1e}", "yes" if r.get("ok") else "no"])
    out = _table(["wrapper", "steps", "largest loss gap", "largest gradient error", "matches"], rows)
    return out + [""] + _footer(data)


def table_accuracy(suites: dict[str, dict]) -> list[str]:
    data = suites["accuracy"]
    cfg = data.get("config", {})
    out = [f"FP8 loss curves against bf16: tiny Llama on a Markov-chain corpus, {cfg.get('steps')} steps, "
           f"means over {cfg.get('window')}-step windows (CPU, exact FP8 emulation).", ""]
    rows = [[r["recipe"], _f(r["curve"][0], 4), _f(r["curve"][-1], 4),
             "—" if r["max_gap"] is None else f"{100 * r['max_gap']:.2f} %", "—" if r["recipe"] == "baseline"
             else ("within" if r["ok"] else "OVER") + f" {100 * r['bound']:.0f} %"] for r in data.get("results", [])]
    out += _table(["recipe", "first window loss", "last window loss", "largest gap", "bound"], rows)
    return out + [""] + _footer(data)


def table_grads(suites: dict[str, dict]) -> list[str]:
    data = suites["grads"]
    cfg = data.get("config", {})
    rows_in = data.get("results", [])
    mags = ", ".join(f"{k} ×{v}" for k, v in cfg.get("magnitudes", {}).items())
    out = [f"Gradient SQNR against float64, dB (higher is better): {cfg.get('model')}, {cfg.get('layers')} layers, "
           f"{cfg.get('batch')}×{cfg.get('seq')} tokens, vocabulary {cfg.get('vocab')}, parts of uneven magnitude "
           f"({mags}); bf16 autocast over float32 parameters, `lm_head` in bf16. Δ: splitlinear − torchao, same "
           "recipe.", ""]
    def label(r: dict) -> str:
        return "bf16" if r["impl"] == "bf16" else f"{r['impl']} {r['recipe']}"
    recipes = list(dict.fromkeys(r["recipe"] for r in rows_in if r["recipe"]))
    pairs = {rc: ({r["impl"]: r for r in rows_in if r["recipe"] == rc}) for rc in recipes}
    header = ["gradient", *[label(r) for r in rows_in]]
    header += [f"Δ {rc}" for rc in recipes if "torchao" in pairs[rc]]
    rows = []
    for name in cfg.get("rows", []):
        row = [name, *[_f(r["sqnr_db"].get(name), 2) for r in rows_in]]
        for rc in recipes:
            if "torchao" in pairs[rc]:
                ours, theirs = pairs[rc]["splitlinear"]["sqnr_db"][name], pairs[rc]["torchao"]["sqnr_db"][name]
                row.append(f"{ours - theirs:+.2f}")
        rows.append(row)
    out += _table(header, rows)
    return out + [""] + _footer(data)


#: marker name -> (suites it needs, renderer)
TABLES: dict[str, tuple[tuple[str, ...], Callable[[dict[str, dict]], list[str]]]] = {
    "setup": (SETUP_ORDER, table_setup),
    "train": (("train",), table_train),
    "decode": (("serve",), table_decode),
    "generate": (("generate",), table_generate),
    "prefill": (("serve",), table_prefill),
    "op": (("op",), table_op),
    "fp8-op": (("fp8-op",), table_fp8_op),
    "host": (("host",), table_host),
    "dist": (("dist",), table_dist),
    "accuracy": (("accuracy",), table_accuracy),
    "grads": (("grads",), table_grads),
}


def load(results: Sequence[Path]) -> dict[str, dict]:
    """Every ``<suite>.json`` of the ``results`` folders by suite name, the first folder holding a
    suite winning."""
    out: dict[str, dict] = {}
    for folder in results:
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            data = json.loads(path.read_text())
            out.setdefault(data.get("suite", path.stem), data)
    return out


def render_table(name: str, suites: dict[str, dict]) -> str:
    if name not in TABLES:
        raise KeyError(f"unknown table {name!r} in the document; known: {', '.join(TABLES)}")
    needs, fn = TABLES[name]
    have = {k: v for k, v in suites.items() if k in needs}
    if name == "setup":
        lines = fn(have) if have else []
        if not lines:
            lines = ["Not measured yet: `python bench/run.py --suite all --out bench/results/<gpu>`, then "
                     "`python bench/report.py`."]
    elif not all(k in have for k in needs):
        lines = [f"Not measured yet. {_command(needs[0])}"]
    else:
        lines = fn(have)
    return "\n".join(lines) + "\n"


def render(doc: str, suites: dict[str, dict]) -> str:
    """``doc`` with every marked table re-rendered from ``suites``."""
    return MARKER.sub(lambda m: m.group(1) + render_table(m.group("name"), suites) + m.group(4), doc)


def plots(suites: dict[str, dict], img: Path) -> list[Path]:
    """Speedup by M (op suites) and each model benchmark against its peers, as PNGs under ``img``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib is not installed; plots skipped (pip install matplotlib)", file=sys.stderr)
        return []
    img.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig: Any, name: str) -> None:
        path = img / name
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    def by_m(rows: list[dict[str, Any]], series: Callable[[list[dict[str, Any]]], dict[str, list[tuple[int, float]]]],
             ylabel: str, name: str) -> None:
        """One panel per shape: each of ``series(rows of that shape)``'s curves against M."""
        shapes = list(dict.fromkeys(r["shape"] for r in rows))
        fig, axes = plt.subplots(1, len(shapes), figsize=(4.5 * len(shapes), 3.6), squeeze=False)
        for ax, shape in zip(axes[0], shapes):
            for label, pts in series([r for r in rows if r["shape"] == shape]).items():
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=label)
            ax.axhline(1.0, color="gray", lw=0.8)
            ax.set_xscale("log", base=2)
            ax.set_title(shape)
            ax.set_xlabel("M (tokens)")
            ax.set_ylabel(ylabel)
            ax.legend(fontsize=7)
        save(fig, name)

    if "fp8-op" in suites and suites["fp8-op"].get("results"):
        by_m(suites["fp8-op"]["results"],
             lambda rows: {f"{col.removeprefix('slin_')} {mode}": [
                 (r["M"], r["bf16"] / r[col]) for r in rows
                 if r["mode"] == mode and isinstance(r.get(col), (int, float))]
                 for mode in ("fwd", "fwd+bwd") for col in ("slin_tensorwise", "slin_rowwise")},
             "× over bf16", "fp8-op-speedup-by-m.png")
    if "op" in suites and suites["op"].get("results"):
        by_m([r for r in suites["op"]["results"] if r["mode"] == "infer"],
             lambda rows: {f"over {col}": [(r["M"], r["ms"][col] / r["ms"]["slin_adjacent"])
                                          for r in rows if col in r["ms"]]
                           for col in ("eager_cat", "n_gemms", "inductor")},
             "splitlinear ×", "op-speedup-by-m.png")
    for suite, key, title, fname in (("train", "step_ms", "training step, ms", "train-step.png"),
                                     ("serve", "decode", "decode step, ms", "decode.png")):
        rows = suites.get(suite, {}).get("results", [])
        if not rows:
            continue
        if suite == "train":
            first = rows[0]["model"]
            rows = [r for r in rows if r["model"] == first]
            labels, values = [_name(r["variant"]) for r in rows], [r["step_ms"] for r in rows]
            title = f"{first}: {title}"
        else:
            labels, values = [_name(r["variant"]) for r in rows], [r["decode"]["ms"] for r in rows]
        fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
        ax.barh(labels[::-1], values[::-1], color=["C1" if "splitlinear" in v else "C0" for v in labels[::-1]])
        ax.set_xlabel(title)
        save(fig, fname)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, nargs="+", default=list(DEFAULT_RESULTS),
                        help="folders of <suite>.json files; a suite comes from the first that holds it")
    parser.add_argument("--doc", type=Path, default=DEFAULT_DOC, help="the document with the table markers")
    parser.add_argument("--img", type=Path, default=DEFAULT_IMG, help="folder for the plots")
    parser.add_argument("--check", action="store_true",
                        help="render the tables only in memory; exit 1 if the document differs")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)
    suites = load(args.results)
    source = " ".join(map(str, args.results))
    doc = args.doc.read_text()
    names = [m.group("name") for m in MARKER.finditer(doc)]
    if not names:
        print(f"report: no <!-- BEGIN name --> markers in {args.doc}", file=sys.stderr)
        return 1
    new = render(doc, suites)
    if args.check:
        if new != doc:
            import difflib

            sys.stderr.writelines(difflib.unified_diff(doc.splitlines(True), new.splitlines(True),
                                                       str(args.doc), f"rendered from {source}"))
            print(f"error: tables in {args.doc} differ from {source}; run 'python bench/report.py'",
                  file=sys.stderr)
            return 1
        print(f"report: {len(names)} tables in {args.doc} match {source}")
        return 0
    args.doc.write_text(new)
    print(f"report: rendered {len(names)} tables into {args.doc} from {len(suites)} suite(s) in {source}")
    if not args.no_plots:
        for path in plots(suites, args.img):
            print(f"report: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
