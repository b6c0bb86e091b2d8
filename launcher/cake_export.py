"""Python face of an exported Consumer CAKE launcher.

A thin ctypes layer over the export's C library (libcake_export_c.so, built by the export's
CMakeLists.txt): no compiler, binding generator or framework is needed at import time, and any
framework's device tensors bind, PyTorch's (data_ptr/dtype/shape/stride) or anything with
__cuda_array_interface__ (CuPy, Numba). Same lifecycle as the C++ launcher:

    op = Export("/path/to/export")                 # loads build/libcake_export_c.so
    launcher = op.plan(M=4096, N=4096, K=4096)     # pure: route and workspace bytes
    launcher.prepare(device=0)                     # modules loaded; all allocation here
    launcher.bind(dict(M=4096, N=4096, K=4096), {"A": a, "B": b, "C": c},
                  workspace=ws, stream=torch.cuda.current_stream().cuda_stream)
    launcher.run()                                 # no allocation, no sync: graph-capturable
"""

import ctypes
import os

_TORCH_DTYPES = {
    "torch.bfloat16": "bf16",
    "torch.float16": "f16",
    "torch.float32": "f32",
    "torch.int32": "s32",
    "torch.uint8": "u8",
    "torch.float8_e4m3fn": "e4m3",
    "torch.float8_e5m2": "e5m2",
}
_TYPESTR_DTYPES = {"<f2": "f16", "<f4": "f32", "<i4": "s32", "|u1": "u8"}


class CakeExportError(RuntimeError):
    """A refusal of the launcher: its message names the argument and what it needed."""


def _view(name, tensor):
    """(address, dtype, shape, strides in elements) of a device tensor."""
    if hasattr(tensor, "data_ptr") and hasattr(tensor, "stride"):
        dtype = _TORCH_DTYPES.get(str(tensor.dtype))
        if dtype is None:
            raise CakeExportError(f"tensor '{name}': dtype {tensor.dtype} has no export name")
        return tensor.data_ptr(), dtype, list(tensor.shape), list(tensor.stride())
    iface = getattr(tensor, "__cuda_array_interface__", None)
    if iface is None:
        raise CakeExportError(
            f"tensor '{name}' is neither a torch tensor nor has __cuda_array_interface__")
    dtype = _TYPESTR_DTYPES.get(iface["typestr"])
    if dtype is None:
        raise CakeExportError(f"tensor '{name}': typestr {iface['typestr']} has no export name")
    shape = list(iface["shape"])
    itemsize = int(iface["typestr"][2:])
    strides = iface.get("strides")
    strides = [s // itemsize for s in strides] if strides else []
    return iface["data"][0], dtype, shape, strides


def _address(obj):
    if obj is None:
        return 0, 0
    if isinstance(obj, int):
        raise CakeExportError("give the workspace as a device tensor, so its size is known")
    address, _, shape, _ = _view("workspace", obj)
    nbytes = obj.numel() * obj.element_size() if hasattr(obj, "numel") else 0
    if not nbytes:
        nbytes = 1
        for d in shape:
            nbytes *= d
        nbytes *= int(obj.__cuda_array_interface__["typestr"][2:])
    return address, nbytes


class Launcher:
    def __init__(self, export, handle):
        self._export = export
        self._lib = export._lib
        self._handle = handle

    def __del__(self):
        if getattr(self, "_handle", None):
            self._lib.cake_launcher_free(self._handle)
            self._handle = None

    @property
    def workspace_bytes(self):
        return self._lib.cake_launcher_workspace_bytes(self._handle)

    @property
    def entry(self):
        return self._lib.cake_launcher_entry(self._handle).decode()

    @property
    def descriptor_encodings(self):
        return self._lib.cake_launcher_descriptor_encodings(self._handle)

    def _check(self, rc, err):
        if rc != 0:
            raise CakeExportError(err.value.decode(errors="replace"))

    def prepare(self, device=0):
        err = ctypes.create_string_buffer(1024)
        self._check(self._lib.cake_launcher_prepare(self._handle, int(device), err, len(err)), err)

    def bind(self, shape, tensors, workspace=None, stream=0):
        err = ctypes.create_string_buffer(1024)
        snames = (ctypes.c_char_p * len(shape))(*[k.encode() for k in shape])
        svalues = (ctypes.c_int64 * len(shape))(*[int(v) for v in shape.values()])
        views = [(name,) + _view(name, t) for name, t in tensors.items()]
        n = len(views)
        names = (ctypes.c_char_p * n)(*[v[0].encode() for v in views])
        ptrs = (ctypes.c_uint64 * n)(*[v[1] for v in views])
        dtypes = (ctypes.c_char_p * n)(*[v[2].encode() for v in views])
        ranks = (ctypes.c_int * n)(*[len(v[3]) for v in views])
        flat_shapes = [d for v in views for d in v[3]]
        # Strides are given for every tensor or for none (then all are row-major contiguous).
        flat_strides = [s for v in views for s in (v[4] or _contiguous(v[3]))]
        shapes = (ctypes.c_int64 * len(flat_shapes))(*flat_shapes)
        strides = (ctypes.c_int64 * len(flat_strides))(*flat_strides)
        ws, ws_bytes = _address(workspace)
        rc = self._lib.cake_launcher_bind(self._handle, snames, svalues, len(shape), names, ptrs,
                                          dtypes, ranks, shapes, strides, n, ws, ws_bytes,
                                          ctypes.c_void_p(int(stream)), err, len(err))
        self._check(rc, err)

    def run(self):
        err = ctypes.create_string_buffer(1024)
        self._check(self._lib.cake_launcher_run(self._handle, err, len(err)), err)


def _contiguous(shape):
    strides = [1] * len(shape)
    for i in range(len(shape) - 1, 0, -1):
        strides[i - 1] = strides[i] * shape[i]
    return strides


class Export:
    """An exported folder; `library` defaults to its build/libcake_export_c.so."""

    def __init__(self, folder, library=None):
        self.folder = os.path.abspath(folder)
        self._lib = ctypes.CDLL(library or os.path.join(self.folder, "build",
                                                        "libcake_export_c.so"))
        lib = self._lib
        lib.cake_export_operation.restype = ctypes.c_char_p
        lib.cake_export_scalars.restype = ctypes.c_char_p
        lib.cake_launcher_plan.restype = ctypes.c_void_p
        lib.cake_launcher_plan.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                           ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                                           ctypes.c_char_p, ctypes.c_size_t]
        lib.cake_launcher_workspace_bytes.restype = ctypes.c_uint64
        lib.cake_launcher_workspace_bytes.argtypes = [ctypes.c_void_p]
        lib.cake_launcher_entry.restype = ctypes.c_char_p
        lib.cake_launcher_entry.argtypes = [ctypes.c_void_p]
        lib.cake_launcher_prepare.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p,
                                              ctypes.c_size_t]
        lib.cake_launcher_bind.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int64),
            ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_uint64),
            ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
            ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.cake_launcher_run.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.cake_launcher_descriptor_encodings.restype = ctypes.c_int64
        lib.cake_launcher_descriptor_encodings.argtypes = [ctypes.c_void_p]
        lib.cake_launcher_free.argtypes = [ctypes.c_void_p]

    @property
    def operation(self):
        return self._lib.cake_export_operation().decode()

    @property
    def scalars(self):
        return self._lib.cake_export_scalars().decode().split(",")

    def plan(self, **shape):
        err = ctypes.create_string_buffer(1024)
        names = (ctypes.c_char_p * len(shape))(*[k.encode() for k in shape])
        values = (ctypes.c_int64 * len(shape))(*[int(v) for v in shape.values()])
        handle = self._lib.cake_launcher_plan(self.folder.encode(), names, values, len(shape),
                                              err, len(err))
        if not handle:
            raise CakeExportError(err.value.decode(errors="replace"))
        return Launcher(self, handle)
