"""The export Python runner's oracle of gemm_bf16_tn (examples/export_consumer/run_export.py):
fresh inputs as torch tensors, and C against A @ B^T in float64 within 0.01 + 2^-7 |ref|."""

import torch

OPERATION = "gemm_bf16_tn"


def tensors(s, gen):
    a = (torch.rand(s["M"], s["K"], generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    b = (torch.rand(s["N"], s["K"], generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    c = torch.full((s["M"], s["N"]), float("nan"), dtype=torch.bfloat16, device="cuda")
    return {"A": a, "B": b, "C": c}


def check(s, t):
    """(outputs out of bound, worst error over its bound, outputs checked)"""
    ref = t["A"].double() @ t["B"].double().T
    over = ((t["C"].double() - ref).abs() / (0.01 + 0.0078125 * ref.abs()))
    over = over.nan_to_num(nan=float("inf"))
    return int((over > 1).sum()), float(over.max()), t["C"].numel()
