#!/usr/bin/env python3
"""The project's narrow-format codecs against ml_dtypes, an independent implementation.

Every code of E4M3 (float8_e4m3fn), E5M2, E3M2, E2M3, E2M1, UE8M0 (float8_e8m0fnu) and UE4M3 (the
sign-free half of float8_e4m3fn) decodes to the same value (NaN to NaN); and fresh random doubles
(a new seed each run, printed; float32-exact, as ml_dtypes rounds through float32) across and
beyond each format's range encode, rounding to nearest even without saturation, to the code ml_dtypes gives: NaN stays NaN, overflow goes to infinity or
NaN where the format has one. Values ml_dtypes does not define alike are left out and said so:
NaN into FP6/FP4 (no NaN there), zero and negatives into UE8M0 (no code; ml_dtypes gives NaN),
UE8M0's exact ties (ours go to the even code, as for every format; ml_dtypes rounds them up; PTX
converts to ue8m0 only toward zero or +infinity) and UE8M0 inputs below 2^-126 (ml_dtypes goes
through float32, whose subnormals it rounds up: 2^-127 * 1.01 becomes 2^-126).
Usage: narrow_float_crosscheck.py PATH/TO/narrow_float_codec
"""
import random
import subprocess
import sys

import ml_dtypes
import numpy as np

FORMATS = {  # ours: (ml_dtypes type, codes)
    "e4m3": (ml_dtypes.float8_e4m3fn, 256),
    "e5m2": (ml_dtypes.float8_e5m2, 256),
    "e3m2": (ml_dtypes.float6_e3m2fn, 64),
    "e2m3": (ml_dtypes.float6_e2m3fn, 64),
    "e2m1": (ml_dtypes.float4_e2m1fn, 16),
    "ue8m0": (ml_dtypes.float8_e8m0fnu, 256),
    "ue4m3": (ml_dtypes.float8_e4m3fn, 128),
}


def run(tool, mode, fmt, stdin=""):
    out = subprocess.run([tool, mode, fmt], input=stdin, capture_output=True, text=True, check=True)
    return out.stdout.split("\n")[:-1]


def main():
    np.seterr(all="ignore")  # overflow to infinity in the casts is what is being compared
    tool = sys.argv[1]
    seed = random.SystemRandom().randrange(2**63)
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    failures = 0
    for fmt, (dtype, codes) in FORMATS.items():
        # Decode: every code.
        theirs = np.arange(codes, dtype=np.uint8).view(dtype).astype(np.float64)
        ours = {}
        for line in run(tool, "decode", fmt):
            code, text = line.split()
            ours[int(code)] = float("nan") if text == "nan" else float(text) if "inf" in text else float.fromhex(text)
        for code in range(codes):
            a, b = ours[code], theirs[code]
            if not (a == b or (np.isnan(a) and np.isnan(b))):
                print(f"{fmt} decode {code}: ours {a} ml_dtypes {b}")
                failures += 1
        # Encode: random magnitudes from far below the smallest value to far above the largest.
        finite = theirs[np.isfinite(theirs)]
        lo, hi = np.log2(finite[finite > 0].min()), np.log2(finite.max())
        values = np.exp2(rng.uniform(lo - 4, hi + 3, 40000))
        # ml_dtypes converts a double through float32: a double within half a float32 ulp of a
        # tie would be rounded twice there (to the tie, then to even), so the draws are made
        # float32-exact where float32 holds them, and both sides encode the same value once.
        values = np.where(np.abs(values) < np.finfo(np.float32).max,
                          values.astype(np.float32).astype(np.float64), values)
        values = np.concatenate([values, -values, [0.0, -0.0, np.inf, -np.inf, np.nan]])
        # Every value between two neighbours exactly: the ties.
        values = np.concatenate([values, (finite[:-1] + np.diff(finite) / 2)])
        skipped = 0
        keep = []
        for v in values:
            if np.isnan(v) and fmt in ("e3m2", "e2m3", "e2m1"):
                skipped += 1
            elif fmt == "ue8m0" and (not v > 0 or v < 2.0**-126 or np.log2(v / 1.5) % 1 == 0):
                skipped += 1
            elif fmt in ("ue8m0",) and np.isinf(v):
                skipped += 1  # ml_dtypes: inf -> NaN; ours: non-saturating overflow -> NaN too, checked below
            elif fmt == "ue4m3" and (v < 0 or np.isinf(v) or (v == 0 and np.signbit(v))):
                skipped += 1  # sign-free: negatives are refused by ours, signed in ml_dtypes
            else:
                keep.append(float(v))
        codes_ours = run(tool, "encode", fmt, "".join(float.hex(v) + "\n" for v in keep))
        theirs_codes = np.array(keep, dtype=np.float64).astype(dtype).view(np.uint8)
        theirs_vals = theirs_codes.view(dtype).astype(np.float64)
        for v, c, t, tv in zip(keep, codes_ours, theirs_codes, theirs_vals):
            if c == "none":
                print(f"{fmt} encode {v!r}: ours none, ml_dtypes {t}")
                failures += 1
                continue
            ov = ours[int(c)]
            if int(c) != int(t) and not (np.isnan(ov) and np.isnan(tv)):
                print(f"{fmt} encode {v!r}: ours {c} ({ov}) ml_dtypes {t} ({tv})")
                failures += 1
        print(f"{fmt}: {codes} codes decoded, {len(keep)} values encoded alike"
              f"{f', {skipped} left out (not defined alike)' if skipped else ''}")
    print("FAILED" if failures else "ok", failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
