// The CUDA backend: parascan::cuda{stream}. Same entry points, options and contracts as the host
// backend; every pointer (data, initial, final, result) is device memory, offsets arrays of packed
// layouts may be host or device memory. Everything is enqueued on `stream`; nothing synchronises the
// device, except reading device-resident offsets arrays back for validation (pass host offsets to avoid
// that wait). Include from .cu files compiled by nvcc.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "cuda/check.cuh"
#include "cuda/device.cuh"
#include "cuda/memory.cuh"
#include "host.hpp"  // the host backend comes with the CUDA one
#include "inputs.hpp"
#include "layout.hpp"
#include "operator_traits.hpp"
#include "options.hpp"
#include "outputs.hpp"
#include "policy.hpp"
#include "validate.hpp"

namespace parascan {

/// CUDA execution: work enqueued on `stream`; temporary storage from `allocator` (null: stream-ordered
/// cudaMallocAsync, see temp_allocator).
struct cuda {
  cudaStream_t stream = nullptr;
  temp_allocator* allocator = nullptr;
};

/// Memory the backend reads and writes, for wrappers that run several scans and check every pointer
/// first (found by argument-dependent lookup from the execution policy): device memory.
inline void require_backend_memory(const cuda&, const void* p, const std::string& name) {
  detail::require_device_pointer(p, name);
}

/// A view whose offsets the host can read, for such wrappers' checks: device-resident offsets of a packed
/// view are copied into `storage` (which waits for the stream, as prefix_scan does for them).
template <class T>
sequences<T> host_readable(const cuda& exec, sequences<T> v, std::vector<index_t>& storage) {
  if (!v.packed() || v.extent[0] < 0) return v;
  if (detail::offsets_place(v.offsets, "offsets") != detail::memory_place::current_device) return v;
  storage.resize(std::size_t(v.extent[0]) + 1);
  detail::cuda_check(
      cudaMemcpyAsync(storage.data(), v.offsets, storage.size() * sizeof(index_t), cudaMemcpyDeviceToHost, exec.stream),
      "offsets");
  detail::cuda_check(cudaStreamSynchronize(exec.stream), "offsets");
  v.offsets = storage.data();
  return v;
}

namespace detail {

/// The policy that runs: the caller's, else default_policy's for the operator, with enough items that
/// every thread moves at least 16 bytes of its narrowest input (8 steps of bf16 gates where fp32 takes
/// 4): a whole vector per load, and the per-tile work spread over more bytes.
template <class Base, class Pack>
using widened_for =
    std::conditional_t<Base::combine == combine_variant::sequential, Base,
                       with_items_at_least<Base, 16 / narrowest_input_bytes<Pack>()>>;
/// The default for a pack: the policy's narrow_inputs one where every input is 2 bytes wide (bf16, fp16:
/// what it was measured on; 1-byte inputs widen further from the base, as before), widened as any.
template <class Base, class Pack,
          bool = has_narrow_policy<Base>::value && widest_input_bytes<Pack>() == 2 &&
                 narrowest_input_bytes<Pack>() == 2>
struct default_for_pack {
  using type = widened_for<Base, Pack>;
};
template <class Base, class Pack>
struct default_for_pack<Base, Pack, true> {
  using type = widened_for<typename Base::narrow_policy, Pack>;
};
template <class Policy, class Op, class Pack>
using cuda_policy_for =
    std::conditional_t<std::is_same<Policy, use_default_policy>::value,
                       typename default_for_pack<default_policy_t<Op, arch::sm90>, Pack>::type, Policy>;

inline temp_allocator& allocator_of(const cuda& exec) {
  return exec.allocator != nullptr ? *exec.allocator : default_temp_allocator();
}

/// Every input's view with host offsets (checks) and with device offsets (kernels); data must be device memory.
template <class Pack>
std::pair<Pack, Pack> stage_inputs(const Pack& in, staged_offsets& staged) {
  Pack on_host = transform_views(in, [&](const auto& v, int k) { return staged.stage(v, input_name(k)).first; });
  Pack on_device = transform_views(in, [&](const auto& v, int k) { return staged.stage(v, input_name(k)).second; });
  int k = 0;
  for_each_view(on_host, [&](const auto& input) {
    const auto& v = underlying(input);
    if (v.count() > 0 && time_extent(v) > 0) require_device_pointer(v.data, input_name(k) + ".data");
    if constexpr (!std::is_same<std::decay_t<decltype(input)>, std::decay_t<decltype(v)>>::value)
      if (v.count() > 0) require_device_pointer(input.boundaries, input_name(k) + ".boundaries");
    ++k;
  });
  return {on_host, on_device};
}

/// Every output's view with host offsets (checks) and with device offsets (kernels).
template <class Outs>
std::pair<Outs, Outs> stage_outputs(const Outs& out, staged_offsets& staged) {
  constexpr int n = Outs::size;
  return {transform_views(out, [&](const auto& v, int k) { return staged.stage(v, output_name(k, n)).first; }),
          transform_views(out, [&](const auto& v, int k) { return staged.stage(v, output_name(k, n)).second; })};
}

/// What dispatch needs to know of a (host-offsets) view.
template <class T>
batch_shape shape_of(const sequences<T>& v) {
  index_t longest = v.length, total = -1;
  if (v.packed()) {
    longest = 0;
    for (index_t i = 0; i < v.extent[0]; ++i) longest = std::max(longest, v.offsets[i + 1] - v.offsets[i]);
    total = (v.offsets[v.extent[0]] - v.offsets[0]) * v.extent[1];
  }
  return {v.count(), longest, v.time_stride != 1 && v.stride[1] == 1 && v.extent[1] > 1, total};
}

}  // namespace detail

/// Inclusive or exclusive prefix scan on the GPU; see the host overload in host.hpp for the contract.
template <class Policy = use_default_policy, class Op, class In, class Outs>
void prefix_scan(const cuda& exec, const Op& op, const In& inputs, const Outs& outputs,
                 const options<output_t<Op>>& opts = {}) {
  static_assert(check_operator<Op>());
  using pack = std::decay_t<decltype(as_pack(inputs))>;
  using out_pack = std::decay_t<decltype(as_outputs(outputs))>;
  static_assert(check_outputs<Op, pack, out_pack>());
  using policy = detail::cuda_policy_for<Policy, Op, pack>;
  temp_allocator& alloc = detail::allocator_of(exec);
  detail::staged_offsets staged(alloc, exec.stream);
  const auto [in_host, in_device] = detail::stage_inputs(as_pack(inputs), staged);
  const auto [out_host, out_device] = detail::stage_outputs(as_outputs(outputs), staged);
  const index_t count = out_host.head.count();
  detail::check_scan_arguments(in_host, out_host, detail::span_of(opts.initial, count),
                               detail::span_of(opts.final, count), "options.final");
  detail::check_scan_options<Op>(opts);
  if (count > 0 && detail::time_extent(out_host.head) > 0)
    for_each_output(out_host, [&](const auto& v, int k) {
      detail::require_device_pointer(v.data, detail::output_name(k, out_pack::size) + ".data");
    });
  if (count > 0) {
    detail::require_device_pointer(opts.initial, "options.initial");
    detail::require_device_pointer(opts.final, "options.final");
  }
  if (count == 0) return;

  engine::segment_args<Op, pack, out_pack> args{
      op, in_device, out_device, opts.initial, opts.final, nullptr, nullptr, count, 1, 0, opts.reverse, opts.exclusive};
  const auto& v = out_host.head;
  engine::run<policy, true>(args, detail::shape_of(v), v, alloc, exec.stream);
}

namespace detail {

/// Runs the CUDA reduction of every sequence into `totals` (project() of each total) or `states` (the
/// whole total states); exactly one of them is non-null. Checks the arguments first.
template <class Policy, class Op, class In>
void reduce_on_device(const cuda& exec, const Op& op, const In& inputs, output_t<Op>* totals, state_t<Op>* states,
                      const options<output_t<Op>>& opts) {
  static_assert(check_operator<Op>());
  using policy = cuda_policy_for<Policy, Op, std::decay_t<decltype(as_pack(inputs))>>;
  temp_allocator& alloc = allocator_of(exec);
  staged_offsets staged(alloc, exec.stream);
  const auto [in_host, in_device] = stage_inputs(as_pack(inputs), staged);
  const index_t count = in_host.head.count();
  const byte_span result = totals != nullptr ? span_of(totals, count) : span_of(states, count);
  check_reduce_arguments(in_host, span_of(opts.initial, count), result, count);
  check_reduce_options<Op>(opts);
  if (count == 0) return;
  require_device_pointer(totals != nullptr ? static_cast<const void*>(totals) : states, "result");
  require_device_pointer(opts.initial, "options.initial");

  engine::segment_args<Op, std::decay_t<decltype(in_device)>, output_pack<>> args{
      op, in_device, {}, opts.initial, totals, states, nullptr, count, 1, 0, opts.reverse, false};
  const auto& v = underlying(in_host.head);
  engine::run<policy, false>(args, shape_of(v), v, alloc, exec.stream);
}

}  // namespace detail

/// Totals of every sequence on the GPU: result[s] (device memory, one per sequence); see host.hpp.
template <class Policy = use_default_policy, class Op, class In>
void reduce_scan(const cuda& exec, const Op& op, const In& inputs, output_t<Op>* result,
                 const options<output_t<Op>>& opts = {}) {
  detail::reduce_on_device<Policy>(exec, op, inputs, result, static_cast<state_t<Op>*>(nullptr), opts);
}

/// Whole total states of every sequence on the GPU: result[s] (device memory); see host.hpp.
template <class Policy = use_default_policy, class Op, class In>
void reduce_states(const cuda& exec, const Op& op, const In& inputs, state_t<Op>* result,
                   const options<output_t<Op>>& opts = {}) {
  detail::reduce_on_device<Policy>(exec, op, inputs, static_cast<output_t<Op>*>(nullptr), result, opts);
}

}  // namespace parascan
