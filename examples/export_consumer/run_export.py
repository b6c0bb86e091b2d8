"""An exported operation run from Python through the export's ctypes face, on PyTorch tensors,
against the operation's float64 oracle (workloads/<name>/export/consumer_oracle.py, found by
operation name; fresh random inputs, outputs poisoned first).

    python3 run_export.py EXPORT_DIR K=V,... [K=V,... ...]

The first shape is the plan's capacity; each shape after it is bound live within it. Prints a
PASS/FAIL line per shape; exit 1 on any FAIL. Needs torch with a GPU and the export built
(cmake -S EXPORT_DIR -B EXPORT_DIR/build && cmake --build EXPORT_DIR/build).
"""

import glob
import importlib.util
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse(text):
    return {k: int(v) for k, v in (item.split("=") for item in text.split(","))}


def oracle_for(operation):
    for path in sorted(glob.glob(os.path.join(ROOT, "workloads", "*", "export",
                                              "consumer_oracle.py"))):
        spec = importlib.util.spec_from_file_location(f"oracle_{len(path)}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if module.OPERATION == operation:
            return module
    raise SystemExit(f"no oracle for {operation} under workloads/*/export/consumer_oracle.py")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    folder = sys.argv[1]
    sys.path.insert(0, os.path.join(folder, "launcher"))
    from cake_export import Export  # the export's own face

    shapes = [parse(t) for t in sys.argv[2:]]
    op = Export(folder)
    oracle = oracle_for(op.operation)
    seed = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
    print(f"operation {op.operation}, seed {seed}, torch {torch.__version__}")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    launcher = op.plan(**shapes[0])
    launcher.prepare(torch.cuda.current_device())
    stream = torch.cuda.Stream()
    failed = 0
    for s in shapes:
        t = oracle.tensors(s, gen)
        torch.cuda.synchronize()
        launcher.bind(s, t, stream=stream.cuda_stream)
        launcher.run()
        stream.synchronize()
        bad, worst, n = oracle.check(s, t)
        failed += 0 if bad == 0 else 1
        print(f"{'PASS' if bad == 0 else 'FAIL'} python {s}: entry '{launcher.entry}', {n} outputs, "
              f"{bad} out of bound, worst {worst:.3f} of bound")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
