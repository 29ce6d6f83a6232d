// Device memory for the CUDA backend: the caller-replaceable temporary-storage allocator, checks that
// pointers are device memory, and staging of packed layouts' offsets arrays.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../layout.hpp"
#include "../shifted.hpp"
#include "check.cuh"

namespace parascan {

namespace detail {

/// What parascan's own memory pool keeps mapped across synchronisations, per device.
constexpr std::uint64_t temp_pool_keeps = std::uint64_t(256) << 20;

/// parascan's stream-ordered memory pool on `device` (created on first use, kept for the process), or
/// null where the device has no memory pools. Its own pool, not CUDA's default one (which the caller's
/// cudaMallocAsync shares, so parascan leaves its settings alone): the default pool returns every freed
/// byte to the device at the next synchronisation, so a scan that ran after one mapped its temporaries
/// again (one fp32 recurrence of 2^28 on an H200: 70.6% of copy against 77.3% with them kept). This one
/// keeps up to temp_pool_keeps bytes; larger workspaces (runtime-size matrix chains: gigabytes) go back
/// down to it at a synchronisation. Like the pooled cuBLAS handles, it lives as long as the device's
/// primary context: a program that resets the device (cudaDeviceReset) passes its own temp_allocator.
inline cudaMemPool_t temp_pool(int device) {
  static std::mutex guard;
  static std::map<int, cudaMemPool_t> pools;
  const std::lock_guard<std::mutex> lock(guard);
  const auto found = pools.find(device);
  if (found != pools.end()) return found->second;
  cudaMemPool_t pool = nullptr;
  int supported = 0;
  cuda_check(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device),
             "cudaDeviceGetAttribute (memory pools)");
  if (supported) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cuda_check(cudaMemPoolCreate(&pool, &props), "parascan's memory pool (cudaMemPoolCreate)");
    std::uint64_t keep = temp_pool_keeps;
    cuda_check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
               "parascan's memory pool (cudaMemPoolSetAttribute)");
  }
  pools[device] = pool;
  return pool;
}

}  // namespace detail

/// Temporary device memory for the strategies that need it (multi-block carries, tile status, uploaded
/// offsets). The default is stream-ordered (cudaMallocFromPoolAsync / cudaFreeAsync on the scan's stream)
/// from parascan's own pool of the current device (detail::temp_pool, which keeps what it maps; CUDA's
/// default pool where a device has no pools of its own), so it never synchronises the device. Derive from
/// it to hand parascan a framework's allocator; deallocate() is called with the same stream once the work
/// using the memory has been enqueued.
struct temp_allocator {
  virtual ~temp_allocator() = default;
  virtual void* allocate(std::size_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    int device = 0;
    detail::cuda_check(cudaGetDevice(&device), "cudaGetDevice");
    if (const cudaMemPool_t pool = detail::temp_pool(device))
      detail::cuda_check(cudaMallocFromPoolAsync(&p, bytes, pool, stream),
                         "temporary storage (cudaMallocFromPoolAsync)");
    else
      detail::cuda_check(cudaMallocAsync(&p, bytes, stream), "temporary storage (cudaMallocAsync)");
    return p;
  }
  virtual void deallocate(void* p, std::size_t /*bytes*/, cudaStream_t stream) { cudaFreeAsync(p, stream); }
};

namespace detail {

inline temp_allocator& default_temp_allocator() {
  static temp_allocator instance;
  return instance;
}

/// A temporary device allocation freed (stream-ordered) at scope exit.
class temp_buffer {
 public:
  temp_buffer(temp_allocator& alloc, cudaStream_t stream, std::size_t bytes)
      : alloc_(&alloc), stream_(stream), bytes_(bytes), ptr_(bytes ? alloc.allocate(bytes, stream) : nullptr) {}
  temp_buffer(const temp_buffer&) = delete;
  temp_buffer& operator=(const temp_buffer&) = delete;
  temp_buffer(temp_buffer&& o) noexcept : alloc_(o.alloc_), stream_(o.stream_), bytes_(o.bytes_), ptr_(o.ptr_) {
    o.ptr_ = nullptr;
  }
  ~temp_buffer() {
    if (ptr_ != nullptr) alloc_->deallocate(ptr_, bytes_, stream_);
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  temp_allocator* alloc_;
  cudaStream_t stream_;
  std::size_t bytes_;
  void* ptr_;
};

/// Where a pointer lives, as parascan::cuda sees it: memory of the current device or managed memory (the
/// kernels read it directly), another device's memory, or host memory: pageable (unknown to CUDA) or
/// page-locked (registered or cudaMallocHost; the checks refuse both all the same, but a copy from it is
/// read when the stream reaches it, not when it is enqueued).
enum class memory_place { current_device, other_device, host, page_locked_host };

inline memory_place place_of(const void* p, int* owner = nullptr) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown host pointer is an answer here, not an error to keep
    return memory_place::host;
  }
  if (attr.type == cudaMemoryTypeManaged) return memory_place::current_device;
  if (attr.type == cudaMemoryTypeHost) return memory_place::page_locked_host;
  if (attr.type != cudaMemoryTypeDevice) return memory_place::host;
  int current = 0;
  cuda_check(cudaGetDevice(&current), "cudaGetDevice");
  if (owner != nullptr) *owner = attr.device;
  return attr.device == current ? memory_place::current_device : memory_place::other_device;
}

/// Whether the device can read p directly: the current device's memory or managed memory.
inline bool is_device_pointer(const void* p) { return place_of(p) == memory_place::current_device; }

inline void require_device_pointer(const void* p, const std::string& name) {
  if (p == nullptr) return;
  int owner = -1;
  const memory_place place = place_of(p, &owner);
  if (place == memory_place::host || place == memory_place::page_locked_host)
    fail(name, "device memory (parascan::cuda reads and writes the GPU's memory), got a host pointer");
  if (place == memory_place::other_device) {
    int current = 0;
    (void)cudaGetDevice(&current);
    fail(name, "memory of the current device (" + std::to_string(current) + "), got memory of device " +
                   std::to_string(owner) + " (make that device current with cudaSetDevice before the call)");
  }
}

/// Where an offsets array is; another device's is refused (the host cannot read it, and the kernels
/// should not).
inline memory_place offsets_place(const void* p, const std::string& name) {
  const memory_place place = place_of(p);
  if (place == memory_place::other_device) require_device_pointer(p, name);  // throws, naming both devices
  return place;
}

/// Packed layouts' offsets arrays, readable on both sides: the host copy validates and plans, the device
/// copy is what kernels read. Host-resident offsets are uploaded (stream-ordered); device-resident ones
/// are copied back once, which waits for the stream (documented: pass host offsets to avoid that wait).
class staged_offsets {
 public:
  staged_offsets(temp_allocator& alloc, cudaStream_t stream) : alloc_(alloc), stream_(stream) {}

  /// A shifted input's view with host offsets and with device offsets (its boundaries stay as given).
  template <class T, class B>
  std::pair<shifted_sequences<T, B>, shifted_sequences<T, B>> stage(const shifted_sequences<T, B>& v,
                                                                    const std::string& name) {
    const auto [on_host, on_device] = stage(v.view, name);
    shifted_sequences<T, B> h = v, d = v;
    h.view = on_host;
    d.view = on_device;
    return {h, d};
  }

  /// The view with host offsets (for checks) and the one with device offsets (for kernels).
  template <class T>
  std::pair<sequences<T>, sequences<T>> stage(const sequences<T>& v, const std::string& name) {
    if (!v.packed()) return {v, v};
    require(v.extent[0] >= 0, name + ".extent", "non-negative batch extents");
    for (auto& e : entries_)
      if (e.given == v.offsets) return {with(v, e.host), with(v, e.device)};
    entry e;
    e.given = v.offsets;
    const std::size_t n = std::size_t(v.extent[0]) + 1, bytes = n * sizeof(index_t);
    const memory_place place = offsets_place(v.offsets, name + ".offsets");
    if (place == memory_place::current_device) {
      e.copy.resize(n);
      cuda_check(cudaMemcpyAsync(e.copy.data(), v.offsets, bytes, cudaMemcpyDeviceToHost, stream_), (name + ".offsets").c_str());
      cuda_check(cudaStreamSynchronize(stream_), (name + ".offsets").c_str());
      e.host = e.copy.data();
      e.device = v.offsets;
    } else {
      // Uploaded straight from the caller's pageable array (a copy of our own cost 2-3 us a call): the call
      // returns once its bytes are staged, so the caller may change them at once. Page-locked offsets
      // would be read by the copy later, when the stream reaches it: those are copied first.
      e.host = v.offsets;
      if (place == memory_place::page_locked_host) {
        e.copy.assign(v.offsets, v.offsets + n);
        e.host = e.copy.data();
      }
      buffers_.emplace_back(alloc_, stream_, bytes);
      e.device = buffers_.back().as<index_t>();
      cuda_check(cudaMemcpyAsync(const_cast<index_t*>(e.device), e.host, bytes, cudaMemcpyHostToDevice, stream_),
                 (name + ".offsets").c_str());
    }
    entries_.push_back(std::move(e));
    return {with(v, entries_.back().host), with(v, entries_.back().device)};
  }

 private:
  struct entry {
    const index_t* given = nullptr;
    std::vector<index_t> copy;  // device offsets read back, or page-locked ones copied
    const index_t* host = nullptr;
    const index_t* device = nullptr;
  };
  template <class T>
  static sequences<T> with(sequences<T> v, const index_t* offsets) {
    v.offsets = offsets;
    return v;
  }
  temp_allocator& alloc_;
  cudaStream_t stream_;
  std::vector<entry> entries_;
  std::vector<temp_buffer> buffers_;
};

}  // namespace detail
}  // namespace parascan
