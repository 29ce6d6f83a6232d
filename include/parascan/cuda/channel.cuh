// Sequence layer for lanes across sequences ((B, T, D), channels last): a warp scans 32 sequences whose
// elements at each time step sit side by side in memory, lane = sequence, each lane stepping through
// time on its own (no combining across threads, no barrier). A "row" is the 32 lanes' elements of one
// input at one step (one 128-byte line for fp32). Each warp copies ROWS rows of every input into a ring
// of STAGES shared-memory stages with asynchronous copies, STAGES - 1 stages ahead of the one it scans,
// so that two or three warps a multiprocessor keep enough bytes in flight (12 KiB a warp for fp32
// pairs): a batch of 12288 channels is only 384 warps. Outputs leave row by row from registers, each
// row one coalesced store.
//
// Rows whose 32 elements are adjacent in memory move in 16-, 8- or 4-byte pieces from lane 0's
// element (the widest piece the rows' addresses allow), lane-consecutive; anything else (a partial
// group of lanes, lanes of different lengths, sequences not adjacent, a shifted input at its boundary)
// moves element by element, each lane its own, into the same places; in the kernels for batches of fewer
// than 32 channels a sequence (RUNS), lanes in aligned runs of adjacent elements of one sequence move in
// 16-byte pieces a run (channel_lane_run, copy_run_pieces).
#pragma once

#include <cuda_pipeline_primitives.h>

#include <cstdint>
#include <type_traits>

#include "../inputs.hpp"
#include "thread.cuh"
#include "warp_io.cuh"

namespace parascan::engine {

/// Steps a stage holds: about 4 KiB of inputs for the warp (16 steps of fp32 pairs, 32 of bf16 pairs,
/// 8 of complex64 pairs), at least 4.
template <class... T>
PARASCAN_HD constexpr int channel_rows() {
  constexpr int step_bytes = 32 * (0 + ... + int(sizeof(input_element_t<T>)));
  return step_bytes * 4 >= 4096 ? 4 : 4096 / step_bytes;
}

/// Bytes of ROWS rows of elements of type T in a stage (16-byte aligned).
template <int ROWS, class T>
PARASCAN_HD constexpr int rows_bytes() {
  return (ROWS * 32 * int(sizeof(T)) + 15) / 16 * 16;
}

/// Shared memory for a channel group's pipeline: STAGES stages of `rows` steps of every input.
template <int STAGES, class Op, class Pack>
struct channel_staging;
template <int STAGES, class Op, class... T>
struct channel_staging<STAGES, Op, input_pack<T...>> {
  static constexpr int rows = channel_rows<T...>();
  static constexpr int stage_bytes = (0 + ... + rows_bytes<rows, input_element_t<T>>());
  static constexpr std::size_t per_warp = std::size_t(stage_bytes) * STAGES;
  static constexpr bool used = per_warp <= 46 * 1024;  // else each lane loads its own elements directly
  static constexpr std::size_t bytes = used ? per_warp : 16;
};

/// The rows [first, first + ROWS) of a stage (scan positions of sequences of n steps), valid for this
/// lane in [begin, end); `whole`: every row is valid for every lane of the warp (warp-uniform).
struct row_block {
  index_t n, first, begin, end;
  bool reverse, whole;
};

/// Piece size (16, 8 or 4 bytes) in which a warp may move whole rows of an input, or 0: the 32 lanes'
/// elements must be adjacent (lane l's at lane 0's + l) with one time stride, and the rows' addresses
/// aligned to the piece. Warp-uniform; all 32 lanes call it.
template <class T>
__device__ __forceinline__ int row_piece(const cursor<const T>& c) {
  constexpr unsigned all = 0xffffffffu;
  const auto address = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(c.base));
  const auto lane0 = __shfl_sync(all, address, 0);
  const auto stride0 = __shfl_sync(all, static_cast<long long>(c.stride), 0);
  const unsigned lane = threadIdx.x % 32;
  const bool adjacent = __all_sync(all, address == lane0 + lane * sizeof(T) && c.stride == stride0);
  if (!adjacent || !moves_as_bytes<T>) return 0;
  const auto bits = lane0 | static_cast<unsigned long long>(c.stride * index_t(sizeof(T)));
  return bits % 16 == 0 ? 16 : bits % 8 == 0 ? 8 : bits % 4 == 0 ? 4 : 0;
}
/// A shifted input also needs the same boundaries in every lane (rows then leave memory together).
template <class T>
__device__ __forceinline__ int row_piece(const shifted_cursor<T>& c) {
  constexpr unsigned all = 0xffffffffu;
  const int piece = row_piece(cursor<const T>{c.base, c.stride});
  const index_t lo0 = __shfl_sync(all, c.lo, 0), hi0 = __shfl_sync(all, c.hi, 0);  // every lane shuffles
  return __all_sync(all, c.lo == lo0 && c.hi == hi0) ? piece : 0;
}

/// Issues the copies of ROWS whole rows in P-byte pieces, lane-consecutive; `lane0`: lane 0's element 0.
/// Piece q of the stage goes to byte q * P of the area (row q / per_row, column q % per_row).
template <int P, int ROWS, class T>
__device__ __forceinline__ void copy_row_pieces(const T* lane0, index_t stride, const row_block& b,
                                                unsigned char* area) {
  constexpr int row_bytes = 32 * int(sizeof(T));  // a multiple of 32: every piece size divides it
  constexpr int per_row = row_bytes / P, pieces = ROWS * per_row;
  const int lane = int(threadIdx.x) % 32;
  if constexpr (32 % per_row == 0) {
    // Each pass of the 32 lanes copies whole rows: a lane's source moves by a fixed number of rows a pass,
    // one pointer add, where a time index and a 64-bit multiply a piece made the long channel groups
    // instruction bound (ncu, H200: 32 warp instructions a row of fp32 pairs).
    constexpr int rows_per_pass = 32 / per_row;
    const int row = lane / per_row, col = lane % per_row;
    const index_t row_stride = b.reverse ? -stride : stride;
    const auto* src =
        reinterpret_cast<const unsigned char*>(lane0 + time_index(b.first + row, b.n, b.reverse) * stride) + col * P;
    const index_t pass_bytes = index_t(rows_per_pass) * row_stride * index_t(sizeof(T));
#pragma unroll
    for (int k = 0; k < (pieces + 31) / 32; ++k, src += pass_bytes)
      if (pieces % 32 == 0 || k * 32 + lane < pieces) __pipeline_memcpy_async(area + (k * 32 + lane) * P, src, P);
  } else {
#pragma unroll
    for (int k = 0; k < (pieces + 31) / 32; ++k) {
      const int q = k * 32 + lane;
      if (pieces % 32 == 0 || q < pieces) {
        const int r = q / per_row, col = q - r * per_row;
        const auto* row =
            reinterpret_cast<const unsigned char*>(lane0 + time_index(b.first + r, b.n, b.reverse) * stride);
        __pipeline_memcpy_async(area + r * row_bytes + col * P, row + col * P, P);
      }
    }
  }
}

/// Issues the copies of one input's rows into its area of a stage (nothing waits for them here).
template <int ROWS, class T>
__device__ __forceinline__ void stage_rows(const cursor<const T>& c, int piece, const row_block& b,
                                           unsigned char* area) {
  const int lane = int(threadIdx.x) % 32;
  if (b.whole && piece != 0) {
    const T* lane0 = c.base - lane;
    if (piece == 16) return copy_row_pieces<16, ROWS>(lane0, c.stride, b, area);
    if (piece == 8) return copy_row_pieces<8, ROWS>(lane0, c.stride, b, area);
    return copy_row_pieces<4, ROWS>(lane0, c.stride, b, area);
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const index_t p = b.first + r;
    if (p >= b.begin && p < b.end) copy_element(area + (r * 32 + lane) * sizeof(T), &c[time_index(p, b.n, b.reverse)]);
  }
}

/// Lanes in runs (narrow channel batches, dispatched to kernels of their own: channel_group's RUNS): where
/// the 32 lanes' elements are not one row, lanes 0..R-1, R..2R-1, ... (R = 16, 8, 4 or 2) may each be R
/// adjacent elements of one sequence's channels (a (B, T, D) or packed batch of D < 32 channels), which
/// move in 16-byte pieces rather than element by element. Returns R, or 0 where some run is not: its
/// elements adjacent with one time stride and one length, its first element and time stride whole 16-byte
/// pieces apart. Lanes of length 0 (those past the batch included, bound to sequence 0) make runs only
/// with lanes of length 0, which copy nothing. Warp-uniform; all 32 lanes call it.
template <class T>
constexpr bool runs_move = moves_as_bytes<T> && sizeof(T) <= 16 && 16 % sizeof(T) == 0;
template <class T>
__device__ __forceinline__ int channel_lane_run(const cursor<const T>& c, index_t n) {
  constexpr unsigned all = 0xffffffffu;
  if constexpr (!runs_move<T>) {
    return 0;
  } else {
    const auto address = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(c.base));
    const unsigned lane = threadIdx.x % 32;
    int run = 0;
#pragma unroll
    for (int R = 16; R * int(sizeof(T)) >= 16 && R >= 2; R /= 2) {
      const int leader = int(lane) & ~(R - 1);
      const auto lead = __shfl_sync(all, address, leader);
      const auto lead_stride = __shfl_sync(all, static_cast<long long>(c.stride), leader);
      const auto lead_n = __shfl_sync(all, static_cast<long long>(n), leader);
      const bool ok = n == 0 ? lead_n == 0
                             : address == lead + (lane - unsigned(leader)) * sizeof(T) && c.stride == lead_stride &&
                                   n == lead_n && lead % 16 == 0 && (lead_stride * index_t(sizeof(T))) % 16 == 0;
      if (run == 0 && __all_sync(all, ok)) run = R;
    }
    return run;
  }
}

/// A shifted input moves element by element wherever its rows are not whole.
template <class T>
__device__ __forceinline__ int channel_lane_run(const shifted_cursor<T>&, index_t) {
  return 0;
}

/// Issues the copies of ROWS rows of lanes in runs of RUN (channel_lane_run), 16-byte pieces: lane l copies
/// piece l % per_row of rows l / per_row, + 32 / per_row, ..., where the run it falls in (leader L) has them.
template <int RUN, int ROWS, class T>
__device__ __forceinline__ void copy_run_pieces(const cursor<const T>& c, const row_block& b, unsigned char* area) {
  constexpr unsigned all = 0xffffffffu;
  constexpr int row_bytes = 32 * int(sizeof(T)), per_row = row_bytes / 16, run_pieces = RUN * int(sizeof(T)) / 16;
  constexpr int rows_per_pass = 32 / per_row;
  static_assert(run_pieces >= 1 && rows_per_pass >= 1, "runs of whole 16-byte pieces, rows of at most 32");
  const int lane = int(threadIdx.x) % 32, col = lane % per_row, leader = (col / run_pieces) * RUN;
  // The run's first element, time stride and bounds (one length a run: every lane of it the same).
  const auto lead = __shfl_sync(all, static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(c.base)), leader);
  const auto* base =
      reinterpret_cast<const unsigned char*>(static_cast<std::uintptr_t>(lead)) + (col % run_pieces) * 16;
  const index_t stride = __shfl_sync(all, static_cast<long long>(c.stride), leader) * index_t(sizeof(T));
  const index_t n = __shfl_sync(all, static_cast<long long>(b.n), leader),
                begin = __shfl_sync(all, static_cast<long long>(b.begin), leader),
                end = __shfl_sync(all, static_cast<long long>(b.end), leader);
#pragma unroll
  for (int k = 0; k < (ROWS + rows_per_pass - 1) / rows_per_pass; ++k) {
    const int r = k * rows_per_pass + lane / per_row;
    const index_t p = b.first + r;
    if (r < ROWS && p >= begin && p < end)
      __pipeline_memcpy_async(area + r * row_bytes + col * 16, base + time_index(p, n, b.reverse) * stride, 16);
  }
}

/// A shifted input's rows: as a plain input's where every row is in memory for every lane, else element
/// by element with the boundary value where a time is not.
template <int ROWS, class T>
__device__ __forceinline__ void stage_rows(const shifted_cursor<T>& c, int piece, const row_block& b,
                                           unsigned char* area) {
  const index_t t0 = time_index(b.first, b.n, b.reverse), t1 = time_index(b.first + ROWS - 1, b.n, b.reverse);
  if (b.whole && piece != 0 && __all_sync(0xffffffffu, c.in_memory(t0) && c.in_memory(t1)))
    return stage_rows<ROWS>(cursor<const T>{c.base, c.stride}, piece, b, area);
  const int lane = int(threadIdx.x) % 32;
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const index_t p = b.first + r;
    if (p < b.begin || p >= b.end) continue;
    const index_t t = time_index(p, b.n, b.reverse);
    unsigned char* dst = area + (r * 32 + lane) * sizeof(T);
    if (c.in_memory(t))
      copy_element(dst, &c.base[t * c.stride]);
    else
      *reinterpret_cast<T*>(dst) = c.boundary;
  }
}

/// A plain input's rows in a RUNS kernel: whole rows, runs of lanes, or element by element.
template <int ROWS, class T>
__device__ __forceinline__ void stage_run_rows(const cursor<const T>& c, int piece, int run, const row_block& b,
                                               unsigned char* area) {
  if ((b.whole && piece != 0) || run == 0) return stage_rows<ROWS>(c, piece, b, area);
  // (Only the runs channel_lane_run can find for T: at least 16 bytes, at most 16 lanes.)
  if constexpr (runs_move<T>) {
    if (run == 16) return copy_run_pieces<16, ROWS>(c, b, area);
    if constexpr (sizeof(T) >= 2)
      if (run == 8) return copy_run_pieces<8, ROWS>(c, b, area);
    if constexpr (sizeof(T) >= 4)
      if (run == 4) return copy_run_pieces<4, ROWS>(c, b, area);
    if constexpr (sizeof(T) >= 8)
      if (run == 2) return copy_run_pieces<2, ROWS>(c, b, area);
  }
  stage_rows<ROWS>(c, piece, b, area);
}
template <int ROWS, class T>
__device__ __forceinline__ void stage_run_rows(const shifted_cursor<T>& c, int piece, int, const row_block& b,
                                               unsigned char* area) {
  stage_rows<ROWS>(c, piece, b, area);
}

/// Each input's piece size (row_piece), in pack order; in RUNS kernels also its runs of lanes
/// (channel_lane_run).
template <class... T>
struct row_pieces {
  int piece[sizeof...(T) > 0 ? sizeof...(T) : 1];
  int run[sizeof...(T) > 0 ? sizeof...(T) : 1];
};
template <int K, bool RUNS = false, class... T>
__device__ __forceinline__ void find_row_pieces(const cursor_pack<>&, row_pieces<T...>&, index_t) {}
template <int K, bool RUNS = false, class... T, class H, class... R>
__device__ __forceinline__ void find_row_pieces(const cursor_pack<H, R...>& c, row_pieces<T...>& pieces,
                                                index_t n) {  // n: this lane's length (runs need one a run)
  pieces.piece[K] = row_piece(c.head);
  if constexpr (RUNS) pieces.run[K] = pieces.piece[K] == 0 ? channel_lane_run(c.head, n) : 0;  // (warp-uniform)
  find_row_pieces<K + 1, RUNS>(c.tail, pieces, n);
}

template <int ROWS, int K, bool RUNS = false, class... T>
__device__ __forceinline__ void stage_all_rows(const cursor_pack<>&, const row_pieces<T...>&, const row_block&,
                                               unsigned char*) {}
template <int ROWS, int K, bool RUNS = false, class... T, class H, class... R>
__device__ __forceinline__ void stage_all_rows(const cursor_pack<H, R...>& c, const row_pieces<T...>& pieces,
                                               const row_block& b, unsigned char* stage) {
  if constexpr (RUNS)
    stage_run_rows<ROWS>(c.head, pieces.piece[K], pieces.run[K], b, stage);
  else
    stage_rows<ROWS>(c.head, pieces.piece[K], b, stage);
  stage_all_rows<ROWS, K + 1, RUNS>(c.tail, pieces, b, stage + rows_bytes<ROWS, input_element_t<H>>());
}

/// This lane's elements of row r of every input, from a completed stage.
template <int ROWS>
__device__ __forceinline__ void read_row(const unsigned char*, int, item_values<1>&) {}
template <int ROWS, class H, class... R>
__device__ __forceinline__ void read_row(const unsigned char* stage, int r, item_values<1, H, R...>& v) {
  using T = input_element_t<H>;
  v.head[0] = *reinterpret_cast<const T*>(stage + (r * 32 + int(threadIdx.x) % 32) * sizeof(T));
  read_row<ROWS>(stage + rows_bytes<ROWS, T>(), r, v.tail);
}

/// This lane's elements at time t of every input, straight from memory.
__device__ __forceinline__ void read_elements(const cursor_pack<>&, index_t, item_values<1>&) {}
template <class H, class... R>
__device__ __forceinline__ void read_elements(const cursor_pack<H, R...>& c, index_t t, item_values<1, H, R...>& v) {
  v.head[0] = c.head[t];
  read_elements(c.tail, t, v.tail);
}

/// Writes one step's values of every output at time t.
__device__ __forceinline__ void store_step(const output_cursors<>&, index_t, const output_items<1>&) {}
template <class H, class... R>
__device__ __forceinline__ void store_step(const output_cursors<H, R...>& out, index_t t,
                                           const output_items<1, H, R...>& v) {
  out.head[t] = v.head[0];
  store_step(out.tail, t, v.tail);
}

/// Cursors on every output in scan order from position `first`: element 0 is time_index(first), each
/// next_row() one step on (the time stride negated when reverse). A row then costs a pointer add.
__device__ __forceinline__ output_cursors<> rows_from(const output_cursors<>&, index_t, index_t, bool) { return {}; }
template <class H, class... R>
__device__ __forceinline__ output_cursors<H, R...> rows_from(const output_cursors<H, R...>& out, index_t first,
                                                              index_t n, bool reverse) {
  return {{&out.head[time_index(first, n, reverse)], reverse ? -out.head.stride : out.head.stride},
          rows_from(out.tail, first, n, reverse)};
}
__device__ __forceinline__ void next_row(output_cursors<>&) {}
template <class H, class... R>
__device__ __forceinline__ void next_row(output_cursors<H, R...>& out) {
  out.head.base += out.head.stride;
  next_row(out.tail);
}

/// One step of a lane: folds the step's elements `v` into `carry` and writes what the step emits.
template <bool WRITE, bool EXCLUSIVE, class Op, class Raw, class Outs>
__device__ __forceinline__ void scan_step(const Op& op, const Raw& v, const Outs& out, index_t t, state_t<Op>& carry) {
  const state_t<Op> x = lift_item(op, v, 0);
  if constexpr (WRITE) {
    typename output_items_for<1, Outs>::type values;
    if constexpr (EXCLUSIVE) set_item(values, 0, emit_item(op, carry, v, 0));
    carry = op(carry, x);
    if constexpr (!EXCLUSIVE) set_item(values, 0, emit_item(op, carry, v, 0));
    store_step(out, t, values);
  } else {
    carry = op(carry, x);
  }
}

/// Scans positions [p0, p1) of this lane's sequence of n steps from `carry` and returns the carry after
/// them, writing emit() of each step to `out` when WRITE. All 32 lanes loop to `loop_end` (the longest
/// lane's p1). `staging`: this warp's channel_staging (null: each lane loads its own elements).
template <int STAGES, bool WRITE, bool RUNS = false, class Op, class... T, class Outs>
__device__ state_t<Op> scan_channels(unsigned char* staging, const Op& op, const cursor_pack<T...>& in, const Outs& out,
                                     index_t n, index_t p0, index_t p1, index_t loop_end, bool reverse, bool exclusive,
                                     state_t<Op> carry) {
  using plan = channel_staging<STAGES, Op, input_pack<T...>>;
  constexpr int ROWS = plan::rows;
  using raw_t = item_values<1, T...>;
  // step_at(base, step) calls step(v, rows) for each valid row from position base, rows: the outputs at
  // the row (rows_from / next_row: a pointer add a row).
  const auto each_step = [&](auto exclusive_tag, auto&& step_at) {
    constexpr bool X = decltype(exclusive_tag)::value;
    for (index_t base = p0; base < loop_end; base += ROWS)
      step_at(base, [&](const raw_t& v, const Outs& rows) { scan_step<WRITE, X>(op, v, rows, 0, carry); });
  };

  if (staging == nullptr) {
    const auto direct = [&](index_t base, auto&& step) {
      Outs rows = rows_from(out, base, n, reverse);
      for (int r = 0; r < ROWS; ++r, next_row(rows)) {
        const index_t p = base + r;
        if (p >= p1) break;
        raw_t v;
        read_elements(in, time_index(p, n, reverse), v);
        step(v, rows);
      }
    };
    if (exclusive)
      each_step(std::true_type{}, direct);
    else
      each_step(std::false_type{}, direct);
    return carry;
  }

  row_pieces<T...> pieces;
  find_row_pieces<0, RUNS>(in, pieces, n);
  // Whole rows need one length in every lane: lane 0's addresses stand for all lanes' (reverse times
  // depend on n).
  const bool one_length = __all_sync(0xffffffffu, n == __shfl_sync(0xffffffffu, n, 0));
  const auto stage = [&](int s) { return staging + s * plan::stage_bytes; };
  const auto block_at = [&](index_t first) {
    const bool whole = one_length && __all_sync(0xffffffffu, first + ROWS <= p1);  // first >= p0 always
    return row_block{n, first, p0, p1, reverse, whole};
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {  // prologue: the first STAGES - 1 stages in flight
    const index_t first = p0 + index_t(s) * ROWS;
    if (first < loop_end) stage_all_rows<ROWS, 0, RUNS>(in, pieces, block_at(first), stage(s));
    __pipeline_commit();
  }
  int current = 0;
  const auto staged = [&](index_t base, auto&& step) {
    // The stage refilled now was read in the previous iteration: every lane must be past that read.
    __syncwarp();
    const index_t ahead = base + index_t(STAGES - 1) * ROWS;
    const int refill = current == 0 ? STAGES - 1 : current - 1;
    if (ahead < loop_end) stage_all_rows<ROWS, 0, RUNS>(in, pieces, block_at(ahead), stage(refill));
    __pipeline_commit();
    __pipeline_wait_prior(STAGES - 1);  // this lane's copies of the current stage have landed
    __syncwarp();                       // and so have the other lanes'
    const unsigned char* rows = stage(current);
    current = current == STAGES - 1 ? 0 : current + 1;
    Outs outputs = rows_from(out, base, n, reverse);
    if (base + ROWS <= p1) {  // this lane's rows all valid: no test per step
#pragma unroll
      for (int r = 0; r < ROWS; ++r, next_row(outputs)) {
        raw_t v;
        read_row<ROWS>(rows, r, v);
        step(v, outputs);
      }
    } else {
#pragma unroll
      for (int r = 0; r < ROWS; ++r, next_row(outputs)) {
        if (base + r >= p1) break;
        raw_t v;
        read_row<ROWS>(rows, r, v);
        step(v, outputs);
      }
    }
  };
  if (exclusive)
    each_step(std::true_type{}, staged);
  else
    each_step(std::false_type{}, staged);
  return carry;
}

}  // namespace parascan::engine
