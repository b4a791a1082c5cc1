// A recorder's chunks and recording paths, and the lanes of a rank_trace. See recorder.hpp.
#include "trace/recorder.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "common/clock.hpp"

namespace rill::detail::trace {

constinit thread_local recorder* tls_recorder = nullptr;
constinit thread_local std::uint64_t tls_releasing_flow = 0;

void rank_trace::note_released(const void* task, std::uint64_t flow) {
  std::lock_guard g(released_mutex_);
  released_[task] = flow;
}

std::uint64_t rank_trace::take_released(const void* task) {
  std::lock_guard g(released_mutex_);
  const auto it = released_.find(task);
  if (it == released_.end()) return 0;
  const std::uint64_t flow = it->second;
  released_.erase(it);
  return flow;
}

void recorder::start_chunk() {
  // Not initialised: every record is written before it is read.
  chunks_.push_back(std::make_unique_for_overwrite<record[]>(chunk_records));
  next_ = chunks_.back().get();
  chunk_end_ = next_ + chunk_records;
}

void recorder::append_instant(kind what, std::uint64_t flow, std::uint64_t arg0, std::uint64_t arg1) {
  append(what, steady_now_ns(), 0, flow, arg0, arg1);
}

void recorder::append_span(kind what, std::uint64_t start_ns, std::uint64_t flow, std::uint64_t arg0,
                           std::uint64_t arg1) {
  append(what, start_ns, steady_now_ns(), flow, arg0, arg1);
}

std::size_t recorder::size() const {
  if (chunks_.empty()) return 0;
  return (chunks_.size() - 1) * chunk_records + static_cast<std::size_t>(next_ - chunks_.back().get());
}

std::vector<std::span<const record>> recorder::chunks() const {
  std::vector<std::span<const record>> result;
  for (const auto& chunk : chunks_) {
    const bool last = &chunk == &chunks_.back();
    result.emplace_back(chunk.get(), last ? static_cast<std::size_t>(next_ - chunk.get()) : chunk_records);
  }
  return result;
}

rank_trace::rank_trace(int rank, int worker_count, int channel_count, int io_count, bool progress) : rank_(rank) {
  for (int w = 0; w < worker_count; ++w) workers_.push_back(std::make_unique<lane>(fmt::format("worker {}", w)));
  for (int c = 0; c < channel_count; ++c) workers_.push_back(std::make_unique<lane>(fmt::format("channel {}", c)));
  for (int c = 0; c < io_count; ++c) workers_.push_back(std::make_unique<lane>(fmt::format("io {}", c)));
  if (progress) workers_.push_back(std::make_unique<lane>("progress"));
}

void rank_trace::attach_thread(int worker_index) {
  if (worker_index < 0 || static_cast<std::size_t>(worker_index) >= workers_.size())
    throw std::out_of_range(
        fmt::format("rill trace: rank {} has no worker {} (it has {})", rank_, worker_index, workers_.size()));
  tls_recorder = &workers_[static_cast<std::size_t>(worker_index)]->records;
}

void rank_trace::attach_other_thread(std::string name) {
  std::lock_guard guard(others_mutex_);
  others_.push_back(std::make_unique<lane>(std::move(name)));
  tls_recorder = &others_.back()->records;
}

std::vector<const rank_trace::lane*> rank_trace::lanes() const {
  std::vector<const lane*> result;
  for (const auto& l : workers_) result.push_back(l.get());
  for (const auto& l : others_) result.push_back(l.get());
  return result;
}

}  // namespace rill::detail::trace
