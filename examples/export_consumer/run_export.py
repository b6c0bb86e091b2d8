"""An exported gemm_bf16_tn or kmeans_assign run from Python through the export's ctypes face,
on PyTorch tensors, against a float64 oracle (fresh random inputs, outputs poisoned first).

    python3 run_export.py EXPORT_DIR M=1024,N=768,K=1032 [M=777,N=333,K=520 ...]

The first shape is the plan's capacity; each shape after it is bound live within it. Prints a
PASS/FAIL line per shape; exit 1 on any FAIL. Needs torch with a GPU and the export built
(cmake -S EXPORT_DIR -B EXPORT_DIR/build && cmake --build EXPORT_DIR/build).
"""

import os
import sys

import torch


def parse(text):
    return {k: int(v) for k, v in (item.split("=") for item in text.split(","))}


def gemm(launcher, s, stream, gen):
    a = (torch.rand(s["M"], s["K"], generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    b = (torch.rand(s["N"], s["K"], generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    c = torch.full((s["M"], s["N"]), float("nan"), dtype=torch.bfloat16, device="cuda")
    launcher.bind(s, {"A": a, "B": b, "C": c}, stream=stream.cuda_stream)
    launcher.run()
    stream.synchronize()
    ref = a.double() @ b.double().T
    bound = 0.01 + 0.0078125 * ref.abs()
    over = ((c.double() - ref).abs() / bound).nan_to_num(nan=float("inf"))
    return int((over > 1).sum()), float(over.max()), c.numel()


def kmeans(launcher, s, stream, gen):
    x = (torch.rand(s["B"], s["N"], s["D"], generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    cen = (torch.rand(s["B"], s["K"], s["D"], generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    idx = torch.full((s["B"], s["N"]), -1, dtype=torch.int32, device="cuda")
    dist = torch.full((s["B"], s["N"]), float("nan"), dtype=torch.float32, device="cuda")
    launcher.bind(s, {"X": x, "C": cen, "idx": idx, "dist": dist}, stream=stream.cuda_stream)
    launcher.run()
    stream.synchronize()
    xd, cd = x.double(), cen.double()
    d2 = torch.cdist(xd, cd) ** 2  # [B, N, K]
    best = d2.min(dim=2).values
    norm_x = (xd * xd).sum(-1)
    norm_c = (cd * cd).sum(-1)
    safe = idx.clamp(0, s["K"] - 1).long()
    got = d2.gather(2, safe.unsqueeze(-1)).squeeze(-1)
    nearest = d2.argmin(dim=2)
    bound = 1e-6 + 6e-5 * (norm_x + norm_c.gather(1, safe) + norm_c.gather(1, nearest))
    over = torch.maximum((got - best) / bound, (dist.double() - best).abs() / bound)
    over = over.nan_to_num(nan=float("inf"))
    over[(idx < 0) | (idx >= s["K"])] = float("inf")
    return int((over > 1).sum()), float(over.max()), idx.numel()


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    folder = sys.argv[1]
    sys.path.insert(0, os.path.join(folder, "launcher"))
    from cake_export import Export  # the export's own face

    shapes = [parse(t) for t in sys.argv[2:]]
    op = Export(folder)
    run = {"gemm_bf16_tn": gemm, "kmeans_assign": kmeans}[op.operation]
    seed = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
    print(f"operation {op.operation}, seed {seed}, torch {torch.__version__}")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    torch.cuda.init()
    launcher = op.plan(**shapes[0])
    launcher.prepare(torch.cuda.current_device())
    stream = torch.cuda.Stream()
    failed = 0
    for s in shapes:
        bad, worst, n = run(launcher, s, stream, gen)
        ok = bad == 0
        failed += 0 if ok else 1
        print(f"{'PASS' if ok else 'FAIL'} python {s}: entry '{launcher.entry}', {n} outputs, "
              f"{bad} out of bound, worst {worst:.3f} of bound")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
