"""A builder of warp-GEMM schedules that writes the IR proto (cake.ir.Module).

Every method checks its arguments against what the IR can express, so a built schedule is
well-formed; whether it is legal for a target (shared memory, registers, instruction forms) is
the daemon's analysis to say, and its diagnostics come back with the candidate.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import text_format

from cake import ir_pb2

_TRANSFERS = {"cp_async": ir_pb2.CP_ASYNC, "tma": ir_pb2.TMA}
_TARGETS = {"sm_120f": ir_pb2.SM_120F, "sm_120a": ir_pb2.SM_120A, "sm_121a": ir_pb2.SM_121A,
            "sm_90": ir_pb2.SM_90}


class ScheduleError(ValueError):
    """A decision the IR cannot express (the message names the parameter and its range)."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ScheduleError(message)


@dataclass(frozen=True)
class Schedule:
    """An immutable warp-GEMM schedule: each with_* returns a new one."""

    name: str = "gemm_bf16"
    target: str = "sm_120f"
    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 32
    warp_rows: int = 2
    warp_cols: int = 2
    stages: int = 3
    transfer: str = "cp_async"
    padding_elements: int = 8
    smem: str = "ROW_MAJOR"  # shared representation: ROW_MAJOR (padded), SWIZZLE_64B, SWIZZLE_128B
    k_slices: int = 1  # split-K: CTAs per output tile, merged through the daemon's workspace
    raster_rows: int = 1  # tile rows per raster band (1 = row-major tile order)
    staged_store: bool = False  # the epilogue stores through shared memory in 16-byte chunks
    persistent_ctas: int = -1  # -1: one CTA per tile; 0: as many as stay resident; n: at most n
    changed: tuple = field(default_factory=tuple)  # the decisions changed from the first one

    @staticmethod
    def gemm(name: str = "gemm_bf16", target: str = "sm_120f") -> "Schedule":
        """The bundled warp GEMM (examples/gemm_bf16.textproto): C = A * B^T, BF16 in and out."""
        _require(target in _TARGETS, f"target must be one of {sorted(_TARGETS)}, not {target!r}")
        _require(name.isidentifier(), f"name must be an identifier, not {name!r}")
        return Schedule(name=name, target=target)

    def _with(self, decision: str, **changes) -> "Schedule":
        changes["changed"] = tuple(dict.fromkeys(self.changed + (decision,)))
        return _replace(self, changes)

    def with_tile(self, m: int, n: int, k: int = 32) -> "Schedule":
        """CTA tile M x N and k-tile K (M, N multiples of 16 in 16..256; K of 16 in 16..128)."""
        for label, v, hi in (("m", m, 256), ("n", n, 256), ("k", k, 128)):
            _require(isinstance(v, int) and 16 <= v <= hi and v % 16 == 0,
                     f"tile {label} must be a multiple of 16 in 16..{hi}, not {v!r}")
        return self._with("tile", tile_m=m, tile_n=n, tile_k=k)

    def with_warps(self, rows: int, cols: int) -> "Schedule":
        """The accumulator's warp grid (rows x cols warps, 1..8 warps in all)."""
        _require(isinstance(rows, int) and isinstance(cols, int) and rows >= 1 and cols >= 1
                 and rows * cols <= 8, f"warp grid must have 1..8 warps, not {rows}x{cols}")
        return self._with("warps", warp_rows=rows, warp_cols=cols)

    def pipeline(self, stages: int, transfer: str = "cp_async") -> "Schedule":
        """The shared-memory ring: 1..4 stages, filled with `transfer` ("cp_async", or "tma":
        one thread's tensor-map box copies, which need swizzled stages: see with_swizzle)."""
        _require(isinstance(stages, int) and 1 <= stages <= 4,
                 f"pipeline stages must be 1..4, not {stages!r}")
        _require(transfer in _TRANSFERS,
                 f"transfer must be one of {sorted(_TRANSFERS)}, not {transfer!r}")
        return self._with("pipeline", stages=stages, transfer=transfer)

    def with_padding(self, elements: int) -> "Schedule":
        """Row padding of the staged tiles, in BF16 elements (0..64, a multiple of 8)."""
        _require(isinstance(elements, int) and 0 <= elements <= 64 and elements % 8 == 0,
                 f"padding must be a multiple of 8 in 0..64, not {elements!r}")
        return self._with("padding", padding_elements=elements)

    def with_swizzle(self, row_bytes: int) -> "Schedule":
        """XOR-swizzled staged tiles (64 or 128 bytes: a k-tile row of 32 or 64 BF16) instead of
        padded rows, so ldmatrix reads are bank-conflict-free without the padding's bytes."""
        _require(row_bytes in (64, 128), f"swizzle must be 64 or 128 bytes, not {row_bytes!r}")
        return self._with("swizzle", smem=f"SWIZZLE_{row_bytes}B", padding_elements=0)

    def with_split_k(self, slices: int) -> "Schedule":
        """Split-K: `slices` CTAs (2..64) share each output tile, each over a contiguous run of
        k-tiles; their FP32 partials are merged in slice order through a workspace (1 = none)."""
        _require(isinstance(slices, int) and 1 <= slices <= 64,
                 f"k slices must be 1..64, not {slices!r}")
        return self._with("split_k", k_slices=slices)

    def with_raster_bands(self, rows: int) -> "Schedule":
        """CTAs walk the tiles in bands of `rows` tile rows (1..256; 1 = row-major), so the
        CTAs resident together read few rows of A and columns of B and L2 serves the rest."""
        _require(isinstance(rows, int) and 1 <= rows <= 256,
                 f"raster band rows must be 1..256, not {rows!r}")
        return self._with("raster", raster_rows=rows)

    def with_staged_store(self) -> "Schedule":
        """The epilogue writes the tile to shared memory (over the ring, once it is read) and
        stores it to global in whole 16-byte row chunks."""
        return self._with("store", staged_store=True)

    def persistent(self, max_ctas: int = 0) -> "Schedule":
        """Persistent CTAs: each walks several tiles with one TMA ring that runs on across them
        (max_ctas bounds the launch, 0 = as many as stay resident; up to 2^20)."""
        _require(isinstance(max_ctas, int) and 0 <= max_ctas <= 1 << 20,
                 f"max_ctas must be 0..2^20, not {max_ctas!r}")
        return self._with("work", persistent_ctas=max_ctas)

    def label(self) -> str:
        repr_ = (f"pad{self.padding_elements}" if self.smem == "ROW_MAJOR"
                 else "swz" + self.smem[len("SWIZZLE_"):-1])
        return (f"{self.tile_m}x{self.tile_n}x{self.tile_k} w{self.warp_rows}x{self.warp_cols} "
                f"s{self.stages} {repr_}" + (" tma" if self.transfer == "tma" else "")
                + (f" k{self.k_slices}" if self.k_slices > 1 else "")
                + (f" g{self.raster_rows}" if self.raster_rows > 1 else "")
                + (" st" if self.staged_store else "")
                + ("" if self.persistent_ctas < 0
                   else f" p{self.persistent_ctas}" if self.persistent_ctas else " p"))

    def module(self) -> ir_pb2.Module:
        """The schedule as the IR proto."""
        _require(self.tile_m % (16 * self.warp_rows) == 0 and self.tile_n % (8 * self.warp_cols) == 0,
                 f"a {self.tile_m}x{self.tile_n} tile does not split over {self.warp_rows}x"
                 f"{self.warp_cols} warps into whole mma tiles")
        _require(self.transfer != "tma" or self.smem != "ROW_MAJOR",
                 "a TMA ring needs swizzled stages (with_swizzle): TMA cannot write padded rows")
        _require(self.persistent_ctas < 0 or (self.transfer == "tma" and self.k_slices == 1),
                 "persistent CTAs need a TMA ring (pipeline(..., transfer='tma')) and no split-K")
        _require(not self.staged_store or (self.k_slices == 1 and self.persistent_ctas < 0),
                 "a staged store is not combined with split-K or persistent CTAs")
        tiles = (f'output: "C" tile_m: {self.tile_m} tile_n: {self.tile_n}'
                 + (f" k_slices: {self.k_slices} k_merge: K_MERGE_ORDERED_WORKSPACE"
                    if self.k_slices > 1 else "")
                 + (f" raster_group_m: {self.raster_rows}" if self.raster_rows > 1 else ""))
        work = (f"static_tiles {{ {tiles} }}" if self.persistent_ctas < 0
                else f"persistent {{ tiles {{ {tiles} }} max_ctas: {self.persistent_ctas} }}")
        m = ir_pb2.Module()
        text_format.Parse(_TEMPLATE.format(
            name=self.name, target=ir_pb2.Arch.Name(_TARGETS[self.target]),
            threads=32 * self.warp_rows * self.warp_cols,
            warps=", ".join(str(w) for w in range(self.warp_rows * self.warp_cols)),
            tm=self.tile_m, tn=self.tile_n, tk=self.tile_k, wr=self.warp_rows, wc=self.warp_cols,
            stages=self.stages, transfer=ir_pb2.Transfer.Name(_TRANSFERS[self.transfer]),
            smem=self.smem,
            pad=(f" padding_elements: {self.padding_elements}" if self.smem == "ROW_MAJOR"
                 else ""),
            work=work, staged=" stage_in_shared: true" if self.staged_store else ""), m)
        return m

    def text(self) -> str:
        """The schedule in protobuf text format, as Propose takes it."""
        return text_format.MessageToString(self.module())


def _replace(s: Schedule, changes: dict) -> Schedule:
    values = {f: getattr(s, f) for f in s.__dataclass_fields__}
    values.update(changes)
    return Schedule(**values)


# The bundled warp GEMM with its decisions as parameters (the same structure as
# examples/gemm_bf16.textproto).
_TEMPLATE = """
name: "{name}"
description: "warp GEMM, BF16 in, FP32 accumulate, BF16 out (built by cake.Schedule)"
target {{ arch: {target} ptx_version: "8.8" }}
kernels {{
  name: "{name}"
  scalars {{ name: "M" dtype: S32 min: 1 }}
  scalars {{ name: "N" dtype: S32 min: 1 }}
  scalars {{ name: "K" dtype: S32 min: 8 multiple_of: 8 }}
  tensors {{ name: "A" dtype: BF16 access: READ_ONLY alignment_bytes: 16
    shape {{ dims {{ symbol: "M" }} dims {{ symbol: "K" }} }} representation {{ kind: ROW_MAJOR }} }}
  tensors {{ name: "B" dtype: BF16 access: READ_ONLY alignment_bytes: 16
    shape {{ dims {{ symbol: "N" }} dims {{ symbol: "K" }} }} representation {{ kind: ROW_MAJOR }} }}
  tensors {{ name: "C" dtype: BF16 access: WRITE_ONLY alignment_bytes: 16
    shape {{ dims {{ symbol: "M" }} dims {{ symbol: "N" }} }} representation {{ kind: ROW_MAJOR }} }}
  launch {{ threads_per_cta: {threads} }}
  roles {{ name: "compute" warps: [{warps}] issuer: ALL_LANES }}
  instrs {{ name: "mma" family: WARP_SYNC shape: M16N8K16 a: BF16 b: BF16 accumulator: F32 }}
  accumulators {{ name: "acc" dtype: F32 owner: "compute" mma: "mma" init: ZERO
    shape {{ dims {{ size: {tm} }} dims {{ size: {tn} }} }} partition {{ rows: {wr} cols: {wc} }} }}
  pipelines {{ name: "ab" stages: {stages} transfer: {transfer}
    producers: "compute" consumers: "compute" }}
  buffers {{ name: "a_stage" space: SHARED dtype: BF16 pipeline: "ab" alignment_bytes: 128
    shape {{ dims {{ size: {tm} }} dims {{ size: {tk} }} }}
    representation {{ kind: {smem}{pad} }} }}
  buffers {{ name: "b_stage" space: SHARED dtype: BF16 pipeline: "ab" alignment_bytes: 128
    shape {{ dims {{ size: {tn} }} dims {{ size: {tk} }} }}
    representation {{ kind: {smem}{pad} }} }}
  work {{ name: "tiles" {work} }}
  ops {{ id: "main" role_region {{ role: "compute" }}
    body {{ id: "tile_loop" for_each_tile {{ work: "tiles" }}
      body {{ id: "k_loop" for_k_tiles {{ k: "K" extent: {tk} }}
        body {{ id: "fill" produce {{ pipeline: "ab" }}
          body {{ id: "copy_a" copy {{ src: "A" dst: "a_stage" transfer: {transfer} vector_bytes: 16 mask: MASK_ZERO_FILL origin: TILE_M_K }} }}
          body {{ id: "copy_b" copy {{ src: "B" dst: "b_stage" transfer: {transfer} vector_bytes: 16 mask: MASK_ZERO_FILL origin: TILE_N_K }} }}
        }}
        body {{ id: "read" consume {{ pipeline: "ab" }}
          body {{ id: "load_a" results: "fa" matrix_load {{ src: "a_stage" operand: OPERAND_A mma: "mma" form: LDMATRIX_X4 }} }}
          body {{ id: "load_b" results: "fb" matrix_load {{ src: "b_stage" operand: OPERAND_B mma: "mma" form: LDMATRIX_X4 }} }}
          body {{ id: "mma_step" mma {{ instr: "mma" a: "fa" b: "fb" acc: "acc" }} }}
          body {{ id: "release" release {{ pipeline: "ab" }} }}
        }}
      }}
      body {{ id: "store" store_accumulator {{ acc: "acc" dst: "C" cast: BF16 mask: MASK_BOUNDS{staged} }} }}
    }}
  }}
}}
"""
