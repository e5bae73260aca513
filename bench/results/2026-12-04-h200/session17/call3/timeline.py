"""One-off: host/GPU timeline of one training step's forward (H200)."""
import copy, gzip, json, os, sys, shutil
sys.path.insert(0, "bench")
import torch
from fp8_train import LLAMA3_8B, build, compile_variant
from torch.profiler import ProfilerActivity, profile

out = os.environ["OUT"] + "/r"
cfg = {**LLAMA3_8B, "vocab_size": 32000}
base = build(cfg, 2, "cuda", torch.bfloat16)
ids = torch.randint(0, 32000, (4, 2048), device="cuda")
for variant in sys.argv[1:]:
    model = copy.deepcopy(base); model.train()
    fn = compile_variant(model, variant, "inductor")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    def step():
        fn(input_ids=ids, labels=ids, use_cache=False).loss.backward()
        opt.step(); opt.zero_grad(set_to_none=True); torch.cuda.synchronize()
    for _ in range(5):
        step()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
    path = f"/tmp/trace-{variant}.json"
    prof.export_chrome_trace(path)
    with open(path, "rb") as f, gzip.open(f"{out}/trace-{variant}.json.gz", "wb") as g:
        shutil.copyfileobj(f, g)
    ev = json.load(open(path))["traceEvents"]
    gpu = sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"), key=lambda e: e["ts"])
    corr = {e["args"]["correlation"]: e for e in gpu if "correlation" in e.get("args", {})}
    launches = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"]
    region = [e for e in ev if e.get("cat") == "cpu_op" and e["name"].startswith("Torch-Compiled Region")]
    fwd = min(region, key=lambda e: e["ts"])
    t0 = fwd["ts"]; tid = fwd["tid"]
    kids = sorted((e for e in ev if e.get("cat") == "cpu_op" and e.get("tid") == tid and t0 <= e["ts"] <= t0 + fwd["dur"] and e is not fwd), key=lambda e: e["ts"])
    # depth-1 ops: not inside another kid
    top = []; end = -1
    for e in kids:
        if e["ts"] >= end:
            top.append(e); end = e["ts"] + e.get("dur", 0)
    lmap = {l["args"]["correlation"]: l for l in launches if "correlation" in l.get("args", {})}
    fk = [k for k in gpu if (l := lmap.get(k.get("args", {}).get("correlation"))) is not None and t0 <= l["ts"] <= t0 + fwd["dur"]]
    gpu_busy = sum(k["dur"] for k in fk)
    print(f"== {variant}: forward host {fwd['dur']/1e3:.2f} ms; its kernels: {len(fk)}, busy {gpu_busy/1e3:.2f} ms, span {(fk[-1]['ts']+fk[-1]['dur']-fk[0]['ts'])/1e3:.2f} ms, first kernel starts {(fk[0]['ts']-t0)/1e3:.3f} ms after the region")
    print(f"   top-level host ops in the forward: {len(top)}; host ms by name (top 12):")
    agg = {}
    for e in top:
        a = agg.setdefault(e["name"][:60], [0.0, 0]); a[0] += e.get("dur", 0); a[1] += 1
    for name, (d, n) in sorted(agg.items(), key=lambda kv: -kv[1][0])[:12]:
        print(f"   {d/1e3:7.3f} ms {n:4d}x  {name}")
    # timeline: first 45 top-level ops with the GPU start of what they launched
    print("   timeline (us from region start): host start, host dur, op, first kernel start, GPU idle before it")
    prev_end = None
    for e in top[:45]:
        ks = [k for k in fk if (l := lmap.get(k["args"].get("correlation"))) and e["ts"] <= l["ts"] <= e["ts"] + e.get("dur", 0)]
        ktxt = ""
        if ks:
            idle = (ks[0]["ts"] - prev_end) if prev_end is not None else 0
            ktxt = f"gpu {ks[0]['ts']-t0:8.1f} idle {max(idle,0):6.1f} n={len(ks)} gpu_dur {sum(k['dur'] for k in ks):7.1f}"
            prev_end = ks[-1]["ts"] + ks[-1]["dur"]
        print(f"   {e['ts']-t0:8.1f} {e.get('dur',0):7.1f}  {e['name'][:48]:48} {ktxt}")
    del fn, model, opt
    torch._dynamo.reset()
