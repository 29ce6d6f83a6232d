// Warp layer for sequences whose time axis is contiguous: loads through a pipeline of shared-memory
// stages, and vector stores.
//
// A thread owns ITEMS consecutive steps, so direct loads would have the lanes of a warp ITEMS elements
// apart. Instead each warp copies its 32 * ITEMS steps of every input ("a chunk") into a ring of STAGES
// shared-memory stages with asynchronous copies (cp.async: global -> shared without registers), STAGES - 1
// tiles ahead of the tile it scans: the loads of later tiles are in flight while the current one is
// scanned, which is what a memory-bound scan needs (bandwidth x latency bytes in flight per
// multiprocessor). A full, 16-byte aligned chunk moves in 16-byte pieces, lane-consecutive (coalesced);
// a ragged, misaligned or strided chunk moves element by element into the same places. Each thread then
// reads its own ITEMS elements as whole pieces (one 16-byte shared load per 16 bytes). Pieces are placed
// with an XOR swizzle within each lane's run so that those reads are free of bank conflicts when a lane
// owns several pieces. Reverse scans read the same chunk backwards: lane l owns the chunk's (31 - l)-th
// run, read back to front, so they need no flip. Each warp uses only its own stages: no block barrier.
// A segment's chunk grid is laid on the first input's memory (aligned_origin; a shifted input's unshifted
// memory): chunks start on multiples of their own size in bytes, whatever the sequence's offset, the
// positions before the segment padding. A shifted input (lag +-1) moves its unshifted chunk on that grid
// and one neighbouring element, and each thread shifts its run in registers (moves_unshifted).
//
// Outputs go straight from registers: a thread's ITEMS consecutive values are written as 16-byte (or
// 8/4-byte) vector stores when aligned, element by element otherwise.
#pragma once

#include <cuda_pipeline_primitives.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../inputs.hpp"
#include "relocatable.cuh"
#include "thread.cuh"
#include "warp.cuh"

namespace parascan::engine {

template <int Bytes>
struct piece_of;
template <>
struct piece_of<16> {
  using type = uint4;
};
template <>
struct piece_of<8> {
  using type = uint2;
};
template <>
struct piece_of<4> {
  using type = unsigned;
};

/// Where the elements of a warp's chunk of one input (32 * ITEMS elements of type T) live in a stage.
template <int ITEMS, class T>
struct chunk_layout {
  static constexpr int size = int(sizeof(T));
  static constexpr int lane_bytes = ITEMS * size;
  static constexpr int piece_for(int p) { return lane_bytes % p == 0 && p % size == 0 ? p : 0; }
  /// Piece size: the widest of 16, 8, 4 bytes that splits a lane's run into whole elements (0: none, or
  /// an element that must move through its copy constructor).
  static constexpr int piece = !moves_as_bytes<T> ? 0
                               : piece_for(16)                       ? 16
                               : piece_for(8)                        ? 8
                                                                     : piece_for(4);
  static constexpr bool vector = piece != 0;
  static constexpr int pieces_per_lane = vector ? lane_bytes / piece : 0;
  static constexpr int elements_per_piece = vector ? piece / size : 1;
  static constexpr int bytes = (32 * lane_bytes + 15) / 16 * 16;

  /// Slot of piece p (memory order): lane run l = p / P keeps its P slots, permuted by an XOR that
  /// differs between the 8 lanes one shared-memory wavefront serves, so each 16-byte read by a quarter
  /// warp hits 8 different bank groups.
  __device__ static __forceinline__ int slot(int p) {
    constexpr int P = pieces_per_lane;
    if constexpr (piece != 16 || P < 2 || (P & (P - 1)) != 0) {
      return p;
    } else {
      const int l = p / P, j = p % P;
      const int f = P >= 8 ? l % 8 : (l / (8 / P)) % P;
      return l * P + (j ^ f);
    }
  }
  /// Byte offset of element m (memory order within the chunk).
  __device__ static __forceinline__ int offset(int m) {
    if constexpr (vector)
      return slot(m / elements_per_piece) * piece + (m % elements_per_piece) * size;
    else
      return m * size;
  }
};

/// Bytes of one input's chunk in a stage, by its tag: a shifted input keeps one more element, its chunk's
/// neighbour in memory (stage_chunk below), in a 16-byte slot after the chunk.
template <class Tag>
constexpr int neighbour_slot_bytes = 0;
template <class T, class B>
constexpr int neighbour_slot_bytes<shifted_tag<T, B>> = 16;
template <int ITEMS, class Tag>
PARASCAN_HD constexpr int chunk_bytes() {
  return chunk_layout<ITEMS, input_element_t<Tag>>::bytes + neighbour_slot_bytes<Tag>;
}
template <int ITEMS, class... Tag>
PARASCAN_HD constexpr int stage_bytes() {
  return (0 + ... + chunk_bytes<ITEMS, Tag>());
}

/// A warp's chunk: scan positions [first, first + 32 * ITEMS) of a sequence of n steps, valid in
/// [begin, end) (a chunk grid aligned to memory starts before the segment: see aligned_origin).
/// `runs_aligned`: the caller has checked that every lane run of a full chunk of every view starts on its
/// vector piece (the stream: contiguous views whose sequences start and end on 16 bytes), so no address is
/// tested; a compile-time constant where the chunk is built, it folds the tests away.
template <int ITEMS>
struct warp_chunk {
  static constexpr int elements = 32 * ITEMS;
  index_t n, first, begin, end;
  bool reverse;
  bool runs_aligned = false;
  __device__ __forceinline__ bool full() const { return first >= begin && first + elements <= end; }
  __device__ __forceinline__ bool valid(index_t p) const { return p >= begin && p < end; }
  /// Time index of the chunk's lowest address (contiguous time: reverse chunks run backwards).
  __device__ __forceinline__ index_t lowest_time() const { return reverse ? n - first - elements : first; }
};

template <int ALIGN, class T>
__device__ __forceinline__ bool aligned_to(const T* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & (ALIGN - 1)) == 0;
}

/// Whether one element can go into shared memory asynchronously (cp.async moves 4, 8 or 16 aligned bytes):
/// trivially copyable elements only, whose alignment proves the address's; a type merely relocatable (an
/// Eigen matrix with DontAlign, alignof 4) may sit anywhere and moves by its copy constructor.
template <class T>
constexpr bool copies_asynchronously = std::is_trivially_copyable<T>::value &&
                                       (sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16) && alignof(T) >= sizeof(T);

/// Copies one element into shared memory: asynchronously when it is 4, 8 or 16 bytes and aligned so.
template <class T>
__device__ __forceinline__ void copy_element(unsigned char* dst, const T* src) {
  constexpr std::size_t size = sizeof(T);
  if constexpr (copies_asynchronously<T>) {
    __pipeline_memcpy_async(dst, src, size);
  } else {
    *reinterpret_cast<T*>(dst) = *src;
  }
}

/// Issues the copies of one input's chunk into `stage` (nothing waits for them here).
template <int ITEMS, class T>
__device__ __forceinline__ void stage_chunk(const cursor<const T>& c, const warp_chunk<ITEMS>& w,
                                            unsigned char* stage) {
  using L = chunk_layout<ITEMS, T>;
  constexpr int N = warp_chunk<ITEMS>::elements;
  const int lane = int(threadIdx.x) % 32;
  if constexpr (L::vector) {
    if (c.stride == 1 && w.full()) {
      const unsigned char* src = reinterpret_cast<const unsigned char*>(c.base + w.lowest_time());
      if (aligned_to<L::piece>(src)) {
#pragma unroll
        for (int k = 0; k < L::pieces_per_lane; ++k) {
          const int p = k * 32 + lane;
          __pipeline_memcpy_async(stage + L::slot(p) * L::piece, src + p * L::piece, L::piece);
        }
        return;
      }
    }
  }
  if constexpr (L::vector && !copies_asynchronously<T>) {
    // 2-byte elements (bf16, fp16) one by one would be plain loads, waited for at once: a ragged chunk of
    // a contiguous input (a sequence shorter than a chunk, a tail) moves its whole pieces asynchronously
    // and only the pieces its valid range cuts element by element (bf16 T = 128: 9.5% of copy before).
    // Relocatable 16-byte elements (Eigen 2x2 fp32 matrices) come here too, a piece an element.
    if (c.stride == 1) {
      const unsigned char* src = reinterpret_cast<const unsigned char*>(c.base + w.lowest_time());
      if (aligned_to<L::piece>(src)) {
        // The chunk's valid scan positions [i0, i1), and the same elements in memory order [lo, hi).
        const index_t i0 = max(w.begin - w.first, index_t(0)), i1 = min(w.end - w.first, index_t(N));
        if (i0 >= i1) return;
        const int lo = int(w.reverse ? N - i1 : i0), hi = int(w.reverse ? N - i0 : i1);
        constexpr int E = L::elements_per_piece;
#pragma unroll
        for (int k = 0; k < L::pieces_per_lane; ++k) {
          const int p = k * 32 + lane, m0 = p * E;
          if (m0 >= lo && m0 + E <= hi) {
            __pipeline_memcpy_async(stage + L::slot(p) * L::piece, src + p * L::piece, L::piece);
          } else {
#pragma unroll
            for (int e = 0; e < E; ++e)
              if (m0 + e >= lo && m0 + e < hi)
                copy_element(stage + L::offset(m0 + e), reinterpret_cast<const T*>(src) + (m0 + e));
          }
        }
        return;
      }
    }
  }
  // Element by element, lane-consecutive in scan order; element i of the scan is element m of memory,
  // at time lowest_time() + m.
  const index_t lowest = w.lowest_time();
  if (c.stride == 1 && w.full()) {  // a misaligned chunk: no bounds test, no stride
    const T* src = c.base + lowest;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const int i = k * 32 + lane, m = w.reverse ? N - 1 - i : i;
      copy_element(stage + L::offset(m), src + m);
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = k * 32 + lane;
    if (w.valid(w.first + i)) {
      const int m = w.reverse ? N - 1 - i : i;
      copy_element(stage + L::offset(m), c.stride == 1 ? c.base + (lowest + m) : &c[lowest + m]);
    }
  }
}

/// Whether a shifted input's chunk moves as its unshifted memory, on the other inputs' chunk grid, plus one
/// neighbouring element (the one before the chunk for lag -1, after it for +1): lag +-1, contiguous, full,
/// every time in memory, the unshifted chunk 16-byte aligned, elements of 2 to 16 bytes (2-byte ones move
/// the neighbour as the 4-byte word that holds it, so that word must lie in the sequence too). Its
/// reader (unstage_chunk) shifts each run by one element in registers. Otherwise the shifted memory moves
/// itself, one element off the grid: for 2-byte elements, which cp.async cannot move one by one, a plain
/// load per element (the bf16 backward: 168 registers, 77% of its floor at T = 65536, H100).
template <int ITEMS, class T>
__device__ __forceinline__ bool moves_unshifted(const shifted_cursor<T>& c, const warp_chunk<ITEMS>& w) {
  constexpr int N = warp_chunk<ITEMS>::elements;
  if constexpr (!chunk_layout<ITEMS, T>::vector || sizeof(T) > 16) {
    return false;
  } else {
    const index_t lowest = w.lowest_time();
    return (c.lag == 1 || c.lag == -1) && c.stride == 1 && w.full() && c.in_memory(lowest) &&
           c.in_memory(lowest + N - 1) && aligned_to<16>(c.base + (lowest - c.lag)) &&
           (sizeof(T) >= 4 || (sizeof(T) == 2 && c.in_memory(c.lag < 0 ? lowest - 1 : lowest + N)));
  }
}

/// A shifted input's chunk: its unshifted memory and the neighbour (moves_unshifted), or as a plain chunk
/// where every time of the chunk is in memory, else element by element, the boundary value written into
/// the stage where a time is not.
template <int ITEMS, class T>
__device__ __forceinline__ void stage_chunk(const shifted_cursor<T>& c, const warp_chunk<ITEMS>& w,
                                            unsigned char* stage) {
  using L = chunk_layout<ITEMS, T>;
  constexpr int N = warp_chunk<ITEMS>::elements;
  const index_t lowest = w.lowest_time();
  if (moves_unshifted<ITEMS>(c, w)) {
    const T* unshifted = c.base - c.lag;
    stage_chunk<ITEMS>(cursor<const T>{unshifted, 1}, w, stage);
    if (threadIdx.x % 32 == 0) {
      // The neighbour, unshifted[lowest - 1] or unshifted[lowest + N], in the slot after the chunk: as the
      // aligned 4-byte word that holds it when it is narrower (the word's high half before a 16-byte
      // aligned chunk, its low half after one).
      const T* neighbour = c.lag < 0 ? unshifted + (lowest - 1) : unshifted + (lowest + N);
      if constexpr (sizeof(T) >= 4) {
        copy_element(stage + L::bytes, neighbour);
      } else {
        const auto word = reinterpret_cast<std::uintptr_t>(neighbour) & ~std::uintptr_t(3);
        __pipeline_memcpy_async(stage + L::bytes, reinterpret_cast<const unsigned*>(word), 4);
      }
    }
    return;
  }
  if (c.in_memory(lowest) && c.in_memory(lowest + N - 1)) {
    stage_chunk<ITEMS>(cursor<const T>{c.base, c.stride}, w, stage);
    return;
  }
  const int lane = int(threadIdx.x) % 32;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = k * 32 + lane;
    if (w.valid(w.first + i)) {
      const int m = w.reverse ? N - 1 - i : i;
      const index_t t = lowest + m;
      if (c.in_memory(t))
        copy_element(stage + L::offset(m), c.stride == 1 ? c.base + t : &c.base[t * c.stride]);
      else
        *reinterpret_cast<T*>(stage + L::offset(m)) = c.boundary;
    }
  }
}

/// Where the chunk grid of segment [p0, p1) starts (scan position <= p0): where the first input's chunks
/// begin on boundaries of their own size in memory (512 bytes for 4-byte elements and 4 items), so that
/// every full chunk moves in aligned 16-byte pieces and whole 128-byte lines whatever the sequence's
/// offset; positions before p0 are padding. The padding costs up to a tile, so a short segment whose
/// chunks are 16-byte aligned anyway keeps p0 (fp32 (8, 1536, 1000): 69% of copy at p0, 67% aligned).
/// p0 also when the input is strided, its elements misaligned, or a chunk's bytes no power of two.
template <int ITEMS, class T>
__device__ __forceinline__ index_t aligned_origin(const cursor<const T>& c, index_t n, index_t p0, index_t p1,
                                                  bool reverse) {
  constexpr index_t chunk = 32 * ITEMS;
  constexpr std::size_t bytes = chunk * sizeof(T);
  if constexpr ((bytes & (bytes - 1)) != 0) {
    return p0;
  } else {
    const auto address = reinterpret_cast<std::uintptr_t>(c.base);
    if (c.stride != 1 || address % sizeof(T) != 0) return p0;
    const index_t base = index_t((address / sizeof(T)) % chunk);  // element index of base, mod chunk
    // Forward: memory index base + p of the chunk at p must be a multiple of chunk. Reverse: the chunk at
    // p spans times [n - p - chunk, n - p), so base + n - p - chunk must be.
    const index_t shift = reverse ? ((p0 - base - n) % chunk + chunk) % chunk : (base + p0) % chunk;
    const bool pieces_anyway = shift * index_t(sizeof(T)) % 16 == 0;
    return pieces_anyway && p1 - p0 < 16 * chunk ? p0 : p0 - shift;
  }
}

/// A shifted first input lays the grid on its unshifted memory, which its full chunks move (moves_unshifted).
template <int ITEMS, class T>
__device__ __forceinline__ index_t aligned_origin(const shifted_cursor<T>& c, index_t n, index_t p0, index_t p1,
                                                  bool reverse) {
  return aligned_origin<ITEMS>(cursor<const T>{c.base - c.lag, c.stride}, n, p0, p1, reverse);
}

template <int ITEMS>
__device__ __forceinline__ void stage_inputs(const cursor_pack<>&, const warp_chunk<ITEMS>&, unsigned char*) {}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ void stage_inputs(const cursor_pack<H, R...>& c, const warp_chunk<ITEMS>& w,
                                             unsigned char* stage) {
  stage_chunk<ITEMS>(c.head, w, stage);
  stage_inputs<ITEMS>(c.tail, w, stage + chunk_bytes<ITEMS, H>());
}

/// Registers holding ITEMS raw elements of each input of a pack (H...: the pack's input tags).
template <int ITEMS, class... T>
struct item_values;
template <int ITEMS>
struct item_values<ITEMS> {};
template <int ITEMS, class H, class... R>
struct item_values<ITEMS, H, R...> {
  input_element_t<H> head[ITEMS];
  item_values<ITEMS, R...> tail;
};

/// Run `run` of a completed stage's chunk of one input (its ITEMS elements, memory order).
template <int ITEMS, class T>
__device__ __forceinline__ void read_run(const unsigned char* stage, int run, T (&mem)[ITEMS]) {
  using L = chunk_layout<ITEMS, T>;
  if constexpr (L::vector) {
    using piece_t = typename piece_of<L::piece>::type;
    piece_t pieces[L::pieces_per_lane];
#pragma unroll
    for (int q = 0; q < L::pieces_per_lane; ++q)
      pieces[q] = *reinterpret_cast<const piece_t*>(stage + L::slot(run * L::pieces_per_lane + q) * L::piece);
    std::memcpy(static_cast<void*>(mem), pieces, sizeof mem);
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) mem[j] = *reinterpret_cast<const T*>(stage + L::offset(run * ITEMS + j));
  }
}

/// A lane's run in memory order -> scan order, or back (reverse: back to front). Two loops, not a conditional
/// expression an element: over elements of class type (Eigen matrices) that chose between two addresses
/// and kept the run on the stack (a 2 x 2 prefix: 80 bytes of stack a thread).
template <int ITEMS, class T>
__device__ __forceinline__ void to_scan_order(bool reverse, const T (&mem)[ITEMS], T (&v)[ITEMS]) {
  if constexpr (std::is_trivially_copyable<T>::value) {  // the form the tuned kernels were measured with
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) v[j] = reverse ? mem[ITEMS - 1 - j] : mem[j];  // constant indices: registers
  } else if (reverse) {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) v[j] = mem[ITEMS - 1 - j];
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) v[j] = mem[j];
  }
}

/// A thread's ITEMS elements of one input, in scan order, from a completed stage.
template <int ITEMS, class T>
__device__ __forceinline__ void unstage_chunk(const warp_chunk<ITEMS>& w, const unsigned char* stage, T (&v)[ITEMS]) {
  using L = chunk_layout<ITEMS, T>;
  const int lane = int(threadIdx.x) % 32;
  const int run = w.reverse ? 31 - lane : lane;  // reverse: lane l reads run 31 - l backwards
  if constexpr (L::vector) {
    T mem[ITEMS];
    read_run<ITEMS>(stage, run, mem);
    to_scan_order(w.reverse, mem, v);
  } else {
    // Element by element straight into place (elements that no 4-, 8- or 16-byte piece splits, or not moved
    // as bytes): read as a run
    // and then reordered, Eigen matrices stayed in local memory (2x2 matrix chains, before they moved as
    // bytes, since 3cd382f: 71.8 -> 58.7% of the copy floor, H100, same process; 71.2% with this).
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
      v[j] = *reinterpret_cast<const T*>(stage + L::offset(run * ITEMS + (w.reverse ? ITEMS - 1 - j : j)));
  }
}

/// The same for a shifted input: a chunk staged as its unshifted memory (moves_unshifted) is read one element
/// off, each run completed by its neighbour run's edge element (or the neighbour slot's); others as staged.
template <int ITEMS, class T>
__device__ __forceinline__ void unstage_chunk(const shifted_cursor<T>& c, const warp_chunk<ITEMS>& w,
                                              const unsigned char* stage, T (&v)[ITEMS]) {
  using L = chunk_layout<ITEMS, T>;
  if (!moves_unshifted<ITEMS>(c, w)) {
    unstage_chunk<ITEMS>(w, stage, v);
    return;
  }
  const int lane = int(threadIdx.x) % 32;
  const int run = w.reverse ? 31 - lane : lane;
  T mem[ITEMS];  // the run's unshifted elements, memory order
  read_run<ITEMS>(stage, run, mem);
  // The element one step away across the run's edge: the last of the run before (lag -1) or the first of
  // the run after (+1), or the neighbour slot at the chunk's edge.
  const bool edge = c.lag < 0 ? run == 0 : run == 31;
  T across;
  if (!edge) {
    across = *reinterpret_cast<const T*>(stage + L::offset(c.lag < 0 ? run * ITEMS - 1 : (run + 1) * ITEMS));
  } else if constexpr (sizeof(T) >= 4) {
    across = *reinterpret_cast<const T*>(stage + L::bytes);
  } else {
    across = *reinterpret_cast<const T*>(stage + L::bytes + (c.lag < 0 ? 4 - int(sizeof(T)) : 0));
  }
  T shifted[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j)
    shifted[j] = c.lag < 0 ? (j == 0 ? across : mem[j - 1]) : (j == ITEMS - 1 ? across : mem[j + 1]);
  to_scan_order(w.reverse, shifted, v);
}
template <int ITEMS, class T>
__device__ __forceinline__ void unstage_chunk(const cursor<const T>&, const warp_chunk<ITEMS>& w,
                                              const unsigned char* stage, T (&v)[ITEMS]) {
  unstage_chunk<ITEMS>(w, stage, v);
}

template <int ITEMS>
__device__ __forceinline__ void unstage_inputs(const cursor_pack<>&, const warp_chunk<ITEMS>&, const unsigned char*,
                                               item_values<ITEMS>&) {}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ void unstage_inputs(const cursor_pack<H, R...>& c, const warp_chunk<ITEMS>& w,
                                               const unsigned char* stage, item_values<ITEMS, H, R...>& v) {
  unstage_chunk<ITEMS>(c.head, w, stage, v.head);
  unstage_inputs<ITEMS>(c.tail, w, stage + chunk_bytes<ITEMS, H>(), v.tail);
}

/// Where lane `lane`'s run of a full chunk lies, in pieces, from the chunk's lowest address (reverse
/// chunks: lane l owns run 31 - l, as unstage_chunk reads a stage).
template <class Piece, class T, class P = std::conditional_t<std::is_const<T>::value, const Piece, Piece>>
__device__ __forceinline__ P* lane_run(T* lowest, int lane, bool reverse, int pieces_per_lane) {
  return reinterpret_cast<P*>(lowest) + (reverse ? 31 - lane : lane) * pieces_per_lane;
}

/// Registers for ITEMS raw elements of every input of a cursor pack.
template <int ITEMS, class Pack>
struct pack_items;
template <int ITEMS, class... T>
struct pack_items<ITEMS, cursor_pack<T...>> {
  using type = item_values<ITEMS, T...>;
};

/// Whether a full chunk of one input can move as vector loads straight into registers, each lane its own
/// run: contiguous, with lane runs aligned to whole pieces (a shifted input: see the overload below).
template <int ITEMS, class Cursor>
__device__ __forceinline__ bool loads_vectors(const Cursor&, const warp_chunk<ITEMS>&) {
  return false;
}
template <int ITEMS, class T>
__device__ __forceinline__ bool loads_vectors(const cursor<const T>& c, const warp_chunk<ITEMS>& w) {
  using L = chunk_layout<ITEMS, T>;
  if constexpr (L::vector)
    return c.stride == 1 && (w.runs_aligned || aligned_to<L::piece>(c.base + w.lowest_time()));
  else
    return false;
}
/// A shifted input (lag +-1, contiguous) loads its unshifted runs as vectors and completes each run across
/// its edge (load_run below).
template <int ITEMS, class T>
__device__ __forceinline__ bool loads_vectors(const shifted_cursor<T>& c, const warp_chunk<ITEMS>& w) {
  using L = chunk_layout<ITEMS, T>;
  if constexpr (L::vector)
    return (c.lag == 1 || c.lag == -1) && c.stride == 1 &&
           (w.runs_aligned || aligned_to<L::piece>(c.base - c.lag + w.lowest_time()));
  else
    return false;
}
template <int ITEMS>
__device__ __forceinline__ bool loads_vectors(const cursor_pack<>&, const warp_chunk<ITEMS>&) {
  return true;
}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ bool loads_vectors(const cursor_pack<H, R...>& c, const warp_chunk<ITEMS>& w) {
  return loads_vectors<ITEMS>(c.head, w) && loads_vectors<ITEMS>(c.tail, w);
}

/// A lane's run of a full chunk of one input, memory order, as vector loads (loads_vectors holds).
template <int ITEMS, class Cursor, class T>
__device__ __forceinline__ void load_run(const Cursor&, const warp_chunk<ITEMS>&, T (&)[ITEMS]) {}
template <int ITEMS, class T>
__device__ __forceinline__ void load_run(const cursor<const T>& c, const warp_chunk<ITEMS>& w, T (&mem)[ITEMS]) {
  using L = chunk_layout<ITEMS, T>;
  if constexpr (L::vector) {
    using piece_t = typename piece_of<L::piece>::type;
    const piece_t* src =
        lane_run<piece_t>(c.base + w.lowest_time(), int(threadIdx.x) % 32, w.reverse, L::pieces_per_lane);
    piece_t pieces[L::pieces_per_lane];
#pragma unroll
    for (int q = 0; q < L::pieces_per_lane; ++q) pieces[q] = src[q];
    std::memcpy(static_cast<void*>(mem), pieces, sizeof mem);
  }
}
/// The same for a shifted input (loads_vectors holds): the run of its unshifted memory, moved one element
/// by the lag in registers; the element across the run's edge comes from the lane that loaded the
/// neighbouring run (a shuffle), or at the chunk's edge from memory (or the boundary value). All 32 lanes
/// call it.
template <int ITEMS, class T>
__device__ __forceinline__ void load_run(const shifted_cursor<T>& c, const warp_chunk<ITEMS>& w, T (&v)[ITEMS]) {
  if constexpr (chunk_layout<ITEMS, T>::vector) {
    const int lane = int(threadIdx.x) % 32;
    const bool before = c.lag < 0;  // v[j] is mem[j - 1] (else mem[j + 1])
    T mem[ITEMS];
    load_run<ITEMS>(cursor<const T>{c.base - c.lag, 1}, w, mem);
    // Lane l holds run l (reverse chunks: run 31 - l); the neighbouring run is one lane away. Branches,
    // not conditional expressions, choose among the elements: a choice between two array elements became
    // a choice of address, which put 2-byte arrays on the stack.
    const int from = lane + (before != w.reverse ? -1 : 1);
    const index_t first = w.lowest_time() + index_t(w.reverse ? 31 - lane : lane) * ITEMS;
    const bool edge = from < 0 || from > 31;
    if (before) {
      const T across = shuffle_from(mem[ITEMS - 1], from & 31);
      v[0] = edge ? c[first] : across;
#pragma unroll
      for (int j = 1; j < ITEMS; ++j) v[j] = mem[j - 1];
    } else {
      const T across = shuffle_from(mem[0], from & 31);
      v[ITEMS - 1] = edge ? c[first + ITEMS - 1] : across;
#pragma unroll
      for (int j = 0; j + 1 < ITEMS; ++j) v[j] = mem[j + 1];
    }
  }
}
/// A thread's ITEMS elements of one input, scan order, element by element (positions outside the chunk's
/// valid range read nothing and hold T{}).
template <int ITEMS, class Cursor, class T>
__device__ __forceinline__ void load_elements(const Cursor& c, const warp_chunk<ITEMS>& w, index_t first,
                                              T (&v)[ITEMS]) {
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) v[j] = w.valid(first + j) ? T(c[time_index(first + j, w.n, w.reverse)]) : T{};
}

template <int ITEMS>
__device__ __forceinline__ void load_runs(const cursor_pack<>&, const warp_chunk<ITEMS>&, item_values<ITEMS>&) {}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ void load_runs(const cursor_pack<H, R...>& c, const warp_chunk<ITEMS>& w,
                                          item_values<ITEMS, H, R...>& v) {
  load_run<ITEMS>(c.head, w, v.head);
  load_runs<ITEMS>(c.tail, w, v.tail);
}
/// Memory order -> scan order (reverse chunks: each lane's run back to front), once every load is issued.
template <int ITEMS>
__device__ __forceinline__ void reverse_runs(item_values<ITEMS>&) {}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ void reverse_runs(item_values<ITEMS, H, R...>& v) {
#pragma unroll
  for (int j = 0; j < ITEMS / 2; ++j) {
    const auto t = v.head[j];
    v.head[j] = v.head[ITEMS - 1 - j];
    v.head[ITEMS - 1 - j] = t;
  }
  reverse_runs<ITEMS>(v.tail);
}
template <int ITEMS>
__device__ __forceinline__ void load_elements(const cursor_pack<>&, const warp_chunk<ITEMS>&, index_t,
                                              item_values<ITEMS>&) {}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ void load_elements(const cursor_pack<H, R...>& c, const warp_chunk<ITEMS>& w, index_t first,
                                              item_values<ITEMS, H, R...>& v) {
  load_elements<ITEMS>(c.head, w, first, v.head);
  load_elements<ITEMS>(c.tail, w, first, v.tail);
}

template <class Op, int ITEMS, class... Read>
__device__ __forceinline__ state_t<Op> lift_item(const Op& op, const item_values<ITEMS>&, int, const Read&... read) {
  return lift(op, read...);
}
template <class Op, int ITEMS, class H, class... R, class... Read>
__device__ __forceinline__ state_t<Op> lift_item(const Op& op, const item_values<ITEMS, H, R...>& v, int i,
                                                 const Read&... read) {
  return lift_item(op, v.tail, i, read..., v.head[i]);
}

template <class Op, int ITEMS, class... Read>
__device__ __forceinline__ auto emit_item(const Op& op, const state_t<Op>& s, const item_values<ITEMS>&, int,
                                          const Read&... read) {
  return emit(op, s, read...);
}
/// What is written for item i from its scan state `s` and its raw input elements (emit()).
template <class Op, int ITEMS, class H, class... R, class... Read>
__device__ __forceinline__ auto emit_item(const Op& op, const state_t<Op>& s, const item_values<ITEMS, H, R...>& v,
                                          int i, const Read&... read) {
  return emit_item(op, s, v.tail, i, read..., v.head[i]);
}

/// The raw elements a thread keeps for ITEMS steps of the inputs of a cursor pack, for an operator
/// with emit() (nothing for the others).
template <int ITEMS, class Op, class Pack>
struct raw_items {
  using type = item_values<ITEMS>;
};
template <int ITEMS, class Op, class... T>
struct raw_items<ITEMS, Op, cursor_pack<T...>> {
  using type = std::conditional_t<emits<Op, input_element_t<T>...>, typename pack_items<ITEMS, cursor_pack<T...>>::type,
                                  item_values<ITEMS>>;
};

/// Lifts the thread's steps [first, first + ITEMS) from their raw elements `v`; positions outside
/// [w.begin, w.end) are the identity (`full`, warp-uniform: none is, no test per step).
template <int ITEMS, class Op, class... T>
__device__ __forceinline__ void lift_items(const Op& op, const warp_chunk<ITEMS>& w, index_t first,
                                           const item_values<ITEMS, T...>& v, state_t<Op> (&items)[ITEMS], bool full) {
  if (full) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) items[i] = lift_item(op, v, i);
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) items[i] = w.valid(first + i) ? lift_item(op, v, i) : op.identity();
  }
}

/// Lifts the thread's steps [first, first + ITEMS) from a completed stage of its warp's chunk `w`, keeping
/// their raw elements in `v` (for emit()); positions outside [w.begin, w.end) are the identity.
template <int ITEMS, class Op, class... T>
__device__ __forceinline__ void lift_staged(const Op& op, const cursor_pack<T...>& in, const warp_chunk<ITEMS>& w,
                                            index_t first, const unsigned char* stage, state_t<Op> (&items)[ITEMS],
                                            item_values<ITEMS, T...>& v) {
  unstage_inputs<ITEMS>(in, w, stage, v);
  lift_items<ITEMS>(op, w, first, v, items, w.full());
}
/// The same without keeping the raw elements (operators without emit()).
template <int ITEMS, class Op, class... T>
__device__ __forceinline__ void lift_staged(const Op& op, const cursor_pack<T...>& in, const warp_chunk<ITEMS>& w,
                                            index_t first, const unsigned char* stage, state_t<Op> (&items)[ITEMS]) {
  item_values<ITEMS, T...> v;
  lift_staged<ITEMS>(op, in, w, first, stage, items, v);
}

/// Lifts the thread's steps [first, first + ITEMS) of its warp's chunk `w` from inputs loaded straight into
/// registers (vectors where every input allows, loads_vectors), keeping their raw elements in `v`;
/// positions outside [w.begin, w.end) are the identity.
template <int ITEMS, class Op, class... T>
__device__ __forceinline__ void lift_direct(const Op& op, const cursor_pack<T...>& in, const warp_chunk<ITEMS>& w,
                                            index_t first, state_t<Op> (&items)[ITEMS], item_values<ITEMS, T...>& v) {
  // Each branch lifts its own elements: one lift after the join kept both branches' registers live (the
  // stream's fp32 recurrence kernel then spilled 52 bytes at its 32-register cap).
  if (w.full() && loads_vectors<ITEMS>(in, w)) {  // every input's loads issued before any is reordered
    load_runs<ITEMS>(in, w, v);
    if (w.reverse) reverse_runs<ITEMS>(v);
    lift_items<ITEMS>(op, w, first, v, items, true);
  } else {
    load_elements<ITEMS>(in, w, first, v);
    lift_items<ITEMS>(op, w, first, v, items, false);
  }
}

/// Writes the thread's outputs for steps [first, first + ITEMS) of its warp's chunk `w`. A full, aligned
/// chunk of a contiguous output goes out as vector stores from registers; any other chunk of a
/// contiguous output goes through `buffer` (a consumed stage of at least chunk_layout<ITEMS, Out>::bytes,
/// or null) and out lane-consecutively, so that a misaligned view or a ragged tail still writes whole
/// sectors; without a buffer, or for a strided output, element by element. All 32 lanes call it.
/// COALESCE: a full aligned chunk also goes through the buffer (in the stage's layout) when there is one,
/// and out as 32 consecutive pieces a store, rather than each lane's run from registers (a piece in each
/// of 32 lines a store, half sectors for 4-byte elements of 32 items: the look-ahead's tiles).
template <int ITEMS, bool COALESCE = false, class Out>
__device__ __forceinline__ void store_items(const cursor<Out>& out, const warp_chunk<ITEMS>& w, index_t first,
                                            const Out (&values)[ITEMS], unsigned char* buffer) {
  using L = chunk_layout<ITEMS, Out>;
  constexpr int N = warp_chunk<ITEMS>::elements;
  const int lane = int(threadIdx.x) % 32;
  if (out.stride == 1) {
    Out* lowest = out.base + w.lowest_time();  // dereferenced only at valid times
    if constexpr (L::vector) {
      if (w.full() && (w.runs_aligned || aligned_to<L::piece>(lowest))) {
        using piece_t = typename piece_of<L::piece>::type;
        Out mem[ITEMS];  // memory order (a branch, not a conditional expression: see load_run)
        if (w.reverse) {
#pragma unroll
          for (int j = 0; j < ITEMS; ++j) mem[j] = values[ITEMS - 1 - j];
        } else {
#pragma unroll
          for (int j = 0; j < ITEMS; ++j) mem[j] = values[j];
        }
        piece_t pieces[L::pieces_per_lane];
        std::memcpy(pieces, static_cast<const void*>(mem), sizeof pieces);
        if (COALESCE && buffer != nullptr) {
          const int run = w.reverse ? 31 - lane : lane;
          __syncwarp();  // every lane has read its inputs from the buffer
#pragma unroll
          for (int q = 0; q < L::pieces_per_lane; ++q)
            *reinterpret_cast<piece_t*>(buffer + L::slot(run * L::pieces_per_lane + q) * L::piece) = pieces[q];
          __syncwarp();
#pragma unroll
          for (int k = 0; k < L::pieces_per_lane; ++k) {
            const int p = k * 32 + lane;
            __stcs(reinterpret_cast<piece_t*>(lowest) + p,
                   *reinterpret_cast<const piece_t*>(buffer + L::slot(p) * L::piece));
          }
          return;
        }
        piece_t* dst = lane_run<piece_t>(lowest, lane, w.reverse, L::pieces_per_lane);
        // Evict-first stores (st.global.cs): a scan never reads its outputs back, and marking them first
        // out of the L2 leaves it to the inputs' lines in flight (a stream's tiles prefetched into the
        // L2): cumsum of (8, 1536, 65536) 96.6 -> 97.45% of copy, the fp32 recurrence 98.45 -> 98.55
        // (H100, same-call A/B, 2026-11-28; evict-first loads cost the recurrence 2.5 points).
#pragma unroll
        for (int q = 0; q < L::pieces_per_lane; ++q) __stcs(dst + q, pieces[q]);
        return;
      }
    }
    if (buffer != nullptr) {
      const int run = w.reverse ? 31 - lane : lane;
      __syncwarp();  // every lane has read its inputs from the buffer
      Out ordered[ITEMS];
      to_scan_order(w.reverse, values, ordered);
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) *reinterpret_cast<Out*>(buffer + L::offset(run * ITEMS + j)) = ordered[j];
      __syncwarp();
      const bool full = w.full();
#pragma unroll
      for (int k = 0; k < ITEMS; ++k) {
        const int i = k * 32 + lane;
        if (full || w.valid(w.first + i)) {
          const int m = w.reverse ? N - 1 - i : i;
          lowest[m] = *reinterpret_cast<const Out*>(buffer + L::offset(m));
        }
      }
      return;
    }
  }
  store_values<ITEMS>(out, w.n, first, w.begin, w.end, w.reverse, values);
}

/// store_items for every output, each regrouped through `buffer` (stage_bytes long) when it fits there.
/// The outputs go one after the other: store_items syncs the warp before it fills the buffer.
template <int ITEMS, bool COALESCE = false>
__device__ __forceinline__ void store_outputs(const output_cursors<>&, const warp_chunk<ITEMS>&, index_t,
                                              const output_items<ITEMS>&, unsigned char*, int) {}
template <int ITEMS, bool COALESCE = false, class H, class... R>
__device__ __forceinline__ void store_outputs(const output_cursors<H, R...>& out, const warp_chunk<ITEMS>& w,
                                              index_t first, const output_items<ITEMS, H, R...>& values,
                                              unsigned char* buffer, int stage_bytes) {
  store_items<ITEMS, COALESCE>(out.head, w, first, values.head,
                               chunk_layout<ITEMS, H>::bytes <= stage_bytes ? buffer : nullptr);
  store_outputs<ITEMS, COALESCE>(out.tail, w, first, values.tail, buffer, stage_bytes);
}

}  // namespace parascan::engine
