// Hopper's warpgroup MMA (wgmma) for TF32 with the A operand in registers and B read from shared memory
// through a matrix descriptor: the few PTX instructions tf32_panel_chain.cuh uses, for sm_90a builds
// (`__CUDA_ARCH_FEAT_SM90_ALL`; other builds run mma.sync at half the rate).
//
// A warpgroup is 4 consecutive warps (128 threads, the first a multiple of 4). One m64n128k8 instruction
// multiplies A (64 x 8, rows 16 w .. 16 w + 15 held by warp w of the group as mma.sync's m16n8k8 A
// fragment: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4), g = lane / 4, t = lane % 4) by B (8 x
// 128) into D (64 x 128 fp32; thread element d[4 j + v] at row 16 w + g + 8 (v / 2), column 8 j + 2 t + v % 2).
//
// B is K-major (entry (k, n) at n's row of 128 bytes, k along it) with the 128-byte swizzle: each row's
// 16-byte pieces XOR row % 8, in atoms of 8 rows x 128 bytes aligned to 1024 bytes; 32 values of k a
// row, so k steps of 8 move the descriptor's start by 32 bytes inside the atom, and rows n, n + 8 are an
// atom (1024 bytes) apart. TF32 operands should be exact TF32 values: the tensor cores keep the top 19 bits
// of each.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PARASCAN_WGMMA 1
#endif

namespace parascan::detail::wgmma {

/// The descriptor of a K-major B operand at shared-memory byte address `address` (a multiple of 16; its
/// atom at a multiple of 1024), 128-byte swizzle, 8-row atoms 1024 bytes apart.
__device__ __forceinline__ std::uint64_t k_major_swizzled(unsigned address) {
  constexpr std::uint64_t leading = 1;           // (unused by K-major swizzled layouts)
  constexpr std::uint64_t stride = 1024 >> 4;    // from rows n to n + 8
  constexpr std::uint64_t swizzle_128 = 1;
  return std::uint64_t((address & 0x3FFFFu) >> 4) | leading << 16 | stride << 32 | swizzle_128 << 62;
}

#if defined(PARASCAN_WGMMA)
/// Orders this thread's register writes (A fragments, accumulators) before the warpgroup's next MMAs.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
/// Waits until at most PENDING committed groups of this warpgroup's MMAs are in flight. (The accumulators
/// are not its operands, so the compiler could move register work on them above it; ptxas would then add
/// its own wait, C7517, which no build here has reported.)
template <int PENDING>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(PENDING) : "memory");
}
/// Makes this thread's generic-proxy writes to shared memory visible to the MMAs' descriptor reads.
__device__ __forceinline__ void shared_writes_to_async_proxy() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/// d = A b (+ d when accumulate): m64n128k8, fp32 accumulators, A (TF32 bits) in registers, B by descriptor.
__device__ __forceinline__ void mma_m64n128k8(float (&d)[64], const unsigned (&a)[4], std::uint64_t b,
                                              bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1;\n}"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(int(accumulate)));
}
#endif

}  // namespace parascan::detail::wgmma
