#!/usr/bin/env python3
"""KMeans assignment: the project's compiled schedules against the peer and torch, side by side.

For each shape (B, N, K, D) and in one process: every compiled schedule (a cakec artifact folder
holding kernel.cubin and receipt.json), the peer Flash-KMeans (PyPI flash-kmeans==0.3.1, Triton;
its assign kernel autotuned and with its own per-GPU heuristic config, given |x|^2 and |c|^2
precomputed as its API takes them) and two torch references on the same BF16 inputs,
  cdist:  torch.cdist(X, C).argmin(-1) on FP32 copies (the copies are made before timing),
  matmul: (|c|^2 - 2 X C^T).argmin(-1) with a BF16 batched matmul (torch's fastest path),
timed with CUDA events in interleaved rounds (median per launch). Every entry's indices are first
checked against a float64 oracle at sampled points (near-tie rule of the contract); an entry with
a wrong index takes no part in a ratio.

--peer-mode mma_sync (the default) sets DISABLE_MMA_V3=1 before Triton compiles anything, so the
peer uses mma.sync, the instruction class SM120/SM121 have; native lets Triton use Hopper's wgmma.
The peer's PTX is read after the run and the count of kernels holding wgmma / mma.sync is printed:
a mma_sync run whose peer PTX holds wgmma exits 3. One mode per process (Triton's in-memory kernel
cache is not keyed on the variable). Prints per shape the ratio peer / best schedule and best
torch / best schedule, and writes JSON. Run on the GPU machine:
  python3 clients/bench/kmeans_vs_torch.py --artifacts DIR [DIR ...] --out result.json
"""
import argparse
import json
import os
import statistics
import sys

import cupy
import torch

# Paper shape first; the last two have K and D that are not powers of two.
SHAPES = [(32, 65536, 1024, 128), (8, 32768, 512, 128), (4, 16384, 256, 64),
          (8, 65536, 1000, 96), (4, 20000, 777, 136)]
RTOL, ATOL = 6e-5, 1e-6


def load(artifact):
    receipt = json.load(open(f"{artifact}/receipt.json"))
    module = cupy.RawModule(path=f"{artifact}/kernel.cubin")
    fn = module.get_function(receipt["kernel_symbol"])
    launch = receipt["launch"]
    shared = int(launch.get("dynamic_shared_bytes", 0))
    fn.max_dynamic_shared_size_bytes = shared
    return {"artifact": artifact, "fn": fn, "launch": launch, "shared": shared,
            "registers": receipt["resources"].get("registers")}


def run_schedule(s, X, C, idx, dist, shape):
    b, n, k, d = shape
    scalars = {"B": b, "N": n, "K": k, "D": d}
    tensors = {"X": X, "C": C, "idx": idx, "dist": dist}
    args = []
    for a in s["launch"]["args"]:
        if a["kind"] == "TENSOR":
            t = tensors[a["name"]]
            args.append(cupy.from_dlpack(t.view(torch.int16) if t.dtype == torch.bfloat16 else t))
        else:
            args.append(cupy.int32(scalars[a["name"]]))

    def grid(g):
        if not g or not g.get("extent"):
            return 1
        return -(-scalars[g["extent"]] // int(g.get("divisor", 1)))

    launch = s["launch"]
    s["fn"]((grid(launch.get("grid_x")), grid(launch.get("grid_y")), grid(launch.get("grid_z"))),
            (int(launch["threads_per_cta"]),), tuple(args), shared_mem=s["shared"])


def check(X, C, idx, dist, shape, samples=256):
    b, n, k, d = shape
    g = torch.Generator(device="cpu").manual_seed(7)
    bs = torch.randint(0, b, (samples,), generator=g)
    ns = torch.randint(0, n, (samples,), generator=g)
    x = X[bs, ns].double()                       # [S, D]
    c = C[bs].double()                           # [S, K, D]
    dd = ((x[:, None, :] - c) ** 2).sum(-1)      # [S, K]
    dmin, jmin = dd.min(-1)
    rep = idx[bs, ns].long()
    in_range = (rep >= 0) & (rep < k)
    drep = dd.gather(1, rep.clamp(0, k - 1)[:, None])[:, 0]
    scale = (x * x).sum(-1) + (c.gather(1, rep.clamp(0, k - 1)[:, None, None].expand(-1, 1, d))[:, 0] ** 2).sum(-1) \
        + (c.gather(1, jmin[:, None, None].expand(-1, 1, d))[:, 0] ** 2).sum(-1)
    ok = in_range & (drep - dmin <= ATOL + RTOL * scale)
    dist_ok = (dist[bs, ns].double() - drep).abs() <= ATOL + RTOL * scale
    return int((~ok).sum()), int((~dist_ok).sum())


def timed(fn, reps):
    times = []
    for _ in range(reps):
        a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        z.record()
        z.synchronize()
        times.append(a.elapsed_time(z))
    return times


def peer_kernels_ptx(assign_module):
    """(kernels, with wgmma, with mma.sync) over every compiled variant of the peer's assign kernels."""
    kernels = wgmma = mma_sync = 0
    for name in ("_euclid_assign_kernel", "_euclid_assign_kernel_split_d"):
        jit = getattr(assign_module, name, None)
        for cache in getattr(jit, "device_caches", {}).values():
            for compiled in cache[0].values():
                ptx = compiled.asm.get("ptx", "")
                kernels += 1
                wgmma += "wgmma" in ptx
                mma_sync += "mma.sync" in ptx
    return kernels, wgmma, mma_sync


def peer_entries(X, C, shape, assign_module):
    """Flash-KMeans' assign, autotuned and heuristic, on the same inputs (norms precomputed)."""
    x_sq = (X.float() ** 2).sum(-1)
    c_sq = (C.float() ** 2).sum(-1)
    out = torch.empty(X.shape[0], X.shape[1], dtype=torch.int32, device="cuda")
    fn = assign_module.euclid_assign_triton
    entries = {
        "flash-kmeans autotuned": lambda: fn(X, C, x_sq, out, c_sq, use_heuristic=False),
        "flash-kmeans heuristic": lambda: fn(X, C, x_sq, out, c_sq, use_heuristic=True),
    }
    result = {}
    for name, run in entries.items():
        out.fill_(-7)
        run()  # the autotuned entry tunes here, before any timing
        torch.cuda.synchronize()
        wrong, _ = check(X, C, out, torch.zeros(out.shape, device="cuda"), shape)
        result[name] = {"fn": run, "wrong_indices": wrong, "wrong_distances": None, "times": [],
                        "kind": "peer"}
    tuned = getattr(assign_module._euclid_assign_kernel_autotuned, "best_config", None)
    if tuned is not None:
        result["flash-kmeans autotuned"]["config"] = str(tuned)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifacts", nargs="+", required=True, help="cakec artifact folders (sm_90)")
    ap.add_argument("--peer-mode", choices=["mma_sync", "native", "none"], default="mma_sync",
                    help="Flash-KMeans on mma.sync (DISABLE_MMA_V3=1, default), on wgmma, or not run")
    ap.add_argument("--shapes", type=int, default=len(SHAPES),
                    help=f"the first N shapes of the table (default all {len(SHAPES)})")
    ap.add_argument("--labels", nargs="*", default=[], help="a label per artifact")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--reps", type=int, default=5, help="launches per round (default 5)")
    ap.add_argument("--out", help="write the JSON result here")
    a = ap.parse_args()
    if a.peer_mode == "mma_sync":
        os.environ["DISABLE_MMA_V3"] = "1"  # before Triton compiles anything
    elif a.peer_mode == "native":
        os.environ.pop("DISABLE_MMA_V3", None)
    assign_module = None
    if a.peer_mode != "none":
        try:
            from flash_kmeans import assign_euclid_triton as assign_module
        except ImportError as e:
            sys.exit(f"kmeans_vs_torch: --peer-mode {a.peer_mode} needs flash-kmeans==0.3.1 ({e}); "
                     "install it or pass --peer-mode none")
    torch.manual_seed(0)
    schedules = [load(p) for p in a.artifacts]
    for i, s in enumerate(schedules):
        s["label"] = a.labels[i] if i < len(a.labels) else s["artifact"].rsplit("/", 1)[-1][:12]
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "peer_mode": a.peer_mode, "shapes": []}
    if assign_module is not None:
        import triton
        from importlib.metadata import version
        result["triton"] = triton.__version__
        result["flash_kmeans"] = version("flash-kmeans")
    for shape in SHAPES[:a.shapes]:
        b, n, k, d = shape
        X = (torch.rand(b, n, d, device="cuda") * 2 - 1).bfloat16()
        C = (torch.rand(b, k, d, device="cuda") * 2 - 1).bfloat16()
        Xf, Cf = X.float(), C.float()
        cnorm = (C.float() ** 2).sum(-1).bfloat16()
        idx = torch.empty(b, n, dtype=torch.int32, device="cuda")
        dist = torch.empty(b, n, dtype=torch.float32, device="cuda")
        entries = {}
        for s in schedules:
            idx.fill_(-7)
            run_schedule(s, X, C, idx, dist, shape)
            torch.cuda.synchronize()
            wrong, wrong_d = check(X, C, idx, dist, shape)
            entries[s["label"]] = {"fn": (lambda s=s: run_schedule(s, X, C, idx, dist, shape)),
                                   "wrong_indices": wrong, "wrong_distances": wrong_d, "times": [],
                                   "kind": "schedule", "registers": s["registers"]}
        # torch references (their agreement with the oracle is reported too)
        def cdist():
            return torch.cdist(Xf, Cf).argmin(-1)

        def matmul():
            return torch.baddbmm(cnorm[:, None, :], X, C.transpose(1, 2), alpha=-2).argmin(-1)

        for name, fn in (("torch cdist+argmin (fp32)", cdist), ("torch matmul+argmin (bf16)", matmul)):
            out = fn().int()
            torch.cuda.synchronize()
            w, _ = check(X, C, out, torch.zeros_like(dist), shape)
            entries[name] = {"fn": fn, "wrong_indices": w, "wrong_distances": None, "times": [], "kind": "torch"}
        if assign_module is not None:
            entries.update(peer_entries(X, C, shape, assign_module))
        for e in entries.values():
            timed(e["fn"], 2)  # warm-up
        for _ in range(a.rounds):
            for e in entries.values():
                e["times"] += timed(e["fn"], a.reps)
        row = {"shape": {"b": b, "n": n, "k": k, "d": d}, "entries": {}}
        flops = 2.0 * b * n * k * d
        for name, e in entries.items():
            med = statistics.median(e["times"])
            row["entries"][name] = {"kind": e["kind"], "median_ms": med, "min_ms": min(e["times"]),
                                    "tflops": flops / (med * 1e-3) / 1e12, "samples": len(e["times"]),
                                    "wrong_indices_of_256": e["wrong_indices"],
                                    "wrong_distances_of_256": e["wrong_distances"],
                                    "registers": e.get("registers"), "config": e.get("config")}

        def fastest_correct(kind):
            ok = {k2: v for k2, v in row["entries"].items()
                  if v["kind"] == kind and v["wrong_indices_of_256"] == 0}
            return min(ok, key=lambda k2: ok[k2]["median_ms"]) if ok else None

        best = fastest_correct("schedule")
        row["best_schedule"] = best
        for kind, key in (("torch", "torch"), ("peer", "peer")):
            ref = fastest_correct(kind)
            if best and ref:
                row[f"best_{key}"] = ref
                row[f"speedup_vs_best_{key}"] = row["entries"][ref]["median_ms"] / row["entries"][best]["median_ms"]
        if best and "flash-kmeans autotuned" in row["entries"] and \
                row["entries"]["flash-kmeans autotuned"]["wrong_indices_of_256"] == 0:
            row["ratio_vs_peer_autotuned"] = (row["entries"]["flash-kmeans autotuned"]["median_ms"] /
                                              row["entries"][best]["median_ms"])
        result["shapes"].append(row)
        print(f"\n{b}x{n}x{k}x{d}  ({flops / 1e9:.0f} GFLOP)")
        for name, v in sorted(row["entries"].items(), key=lambda kv: kv[1]["median_ms"]):
            extra = f"  regs {v['registers']}" if v.get("registers") else ""
            extra += f"  {v['config']}" if v.get("config") else ""
            print(f"  {name:40s} {v['median_ms']:9.3f} ms  {v['tflops']:7.1f} TFLOP/s  "
                  f"wrong idx {v['wrong_indices_of_256']}/256{extra}")
        if best is None:
            print("  no schedule passed the oracle check: no ratio")
        for key in ("torch", "peer"):
            if f"speedup_vs_best_{key}" in row:
                print(f"  best schedule {best} vs {row['best_' + key]}: {row['speedup_vs_best_' + key]:.3f}x")
        if "ratio_vs_peer_autotuned" in row:
            print(f"  RATIO ours / flash-kmeans autotuned ({a.peer_mode}): {row['ratio_vs_peer_autotuned']:.3f}x")
        del X, C, Xf, Cf, idx, dist, entries
        torch.cuda.empty_cache()
    status = 0
    if assign_module is not None:
        kernels, wgmma, mma_sync = peer_kernels_ptx(assign_module)
        result["peer_ptx"] = {"kernels": kernels, "with_wgmma": wgmma, "with_mma_sync": mma_sync}
        print(f"\npeer PTX ({a.peer_mode}): {kernels} compiled kernels, {wgmma} with wgmma, "
              f"{mma_sync} with mma.sync")
        if a.peer_mode == "mma_sync" and (wgmma or not kernels):
            print("peer PTX check FAILED: the mma_sync mode must compile no wgmma")
            status = 3
    if a.out:
        json.dump(result, open(a.out, "w"), indent=2)
    return status


if __name__ == "__main__":
    sys.exit(main())
