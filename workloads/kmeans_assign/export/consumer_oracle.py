"""The export Python runner's oracle of the KMeans assignment
(examples/export_consumer/run_export.py): fresh inputs as torch tensors; the reported centroid's
squared distance within 1e-6 + 6e-5 (|x|^2 + |c_reported|^2 + |c_nearest|^2) of the float64
minimum, and the reported distance within the same of it."""

import torch

OPERATION = "kmeans_assign"


def tensors(s, gen):
    x = (torch.rand(s["B"], s["N"], s["D"], generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    c = (torch.rand(s["B"], s["K"], s["D"], generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    idx = torch.full((s["B"], s["N"]), -1, dtype=torch.int32, device="cuda")
    dist = torch.full((s["B"], s["N"]), float("nan"), dtype=torch.float32, device="cuda")
    return {"X": x, "C": c, "idx": idx, "dist": dist}


def check(s, t):
    """(outputs out of bound, worst error over its bound, outputs checked)"""
    xd, cd, idx = t["X"].double(), t["C"].double(), t["idx"]
    d2 = torch.cdist(xd, cd) ** 2  # [B, N, K]
    best = d2.min(dim=2).values
    nearest = d2.argmin(dim=2)
    norm_x, norm_c = (xd * xd).sum(-1), (cd * cd).sum(-1)
    safe = idx.clamp(0, s["K"] - 1).long()
    got = d2.gather(2, safe.unsqueeze(-1)).squeeze(-1)
    bound = 1e-6 + 6e-5 * (norm_x + norm_c.gather(1, safe) + norm_c.gather(1, nearest))
    over = torch.maximum((got - best) / bound, (t["dist"].double() - best).abs() / bound)
    over = over.nan_to_num(nan=float("inf"))
    over[(idx < 0) | (idx >= s["K"])] = float("inf")
    return int((over > 1).sum()), float(over.max()), idx.numel()
