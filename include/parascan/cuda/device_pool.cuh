// Objects of a device (cuBLAS handles, streams) that cost microseconds to make, which a call's dispatch
// cannot: made on first need, lent one a concurrent caller, and kept for the process. The pools are
// deliberately never destroyed: destroying their objects at exit would race the CUDA runtime's own
// teardown (as PyTorch's pools do not).
#pragma once

#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace parascan {
namespace detail {

template <class Object>
class device_pool {
 public:
  /// An object of `device` from the pool, else make(device)'s.
  template <class Make>
  Object take(int device, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = 0; i < free_.size(); ++i)
        if (free_[i].first == device) {
          const Object o = free_[i].second;
          free_.erase(free_.begin() + std::ptrdiff_t(i));
          return o;
        }
    }
    return make(device);
  }
  void give(int device, Object o) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.emplace_back(device, o);
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<int, Object>> free_;
};

}  // namespace detail
}  // namespace parascan
