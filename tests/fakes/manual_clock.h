#pragma once
// A clock the test drives: time stands still until advance(); timers that come due are posted to
// the io_context in due order. With runFor() a test lives through exactly a window of simulated
// time (every timer due in it fires, handlers run to idleness), so "nothing happened before the
// deadline" is checked at a known instant, and no test sleeps on wall time.

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "core/clock.h"

namespace okna::testing {

class ManualClock : public core::Clock {
 public:
  explicit ManualClock(boost::asio::io_context& io) : io_(io) {}

  TimePoint now() const override { return state_->now; }
  std::chrono::system_clock::time_point wallNow() const override {
    return kWallStart + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            state_->now - TimePoint{});
  }
  std::unique_ptr<core::Timer> makeTimer() override {
    return std::make_unique<ManualTimer>(io_, state_, state_->nextId++);
  }

  /** Moves time forward by `d`, posting the handlers of the timers that come due. */
  void advance(std::chrono::nanoseconds d) { advanceTo(state_->now + d); }
  void advanceTo(TimePoint t) {
    if (t > state_->now) state_->now = t;
    fireDue();
  }
  /** When the next pending timer is due (none: nullopt). */
  std::optional<TimePoint> nextDue() const {
    std::optional<TimePoint> out;
    for (const auto& [id, w] : state_->waits)
      if (!out || w.first < *out) out = w.first;
    return out;
  }
  /** What "run to idleness" means between timers in runFor(), when the test has more to run
   *  than the io_context (e.g. a fake worker thread's queue); default: drain(). */
  void setSettle(std::function<void()> settle) { settle_ = std::move(settle); }
  /** Runs ready handlers until none is left. */
  void drain() {
    for (int i = 0; i < 10000; ++i) {
      io_.restart();
      if (io_.poll() == 0) return;
    }
  }
  /** Lives through `window` of simulated time: handlers run to idleness, then time jumps to the
   *  next due timer, until the window ends; `stop` (optional) ends it early when it holds. */
  bool runFor(std::chrono::nanoseconds window, const std::function<bool()>& stop = {}) {
    const TimePoint end = state_->now + window;
    const auto settle = [this] { settle_ ? settle_() : drain(); };
    for (;;) {
      settle();
      if (stop && stop()) return true;
      const auto next = nextDue();
      if (!next || *next > end) break;
      advanceTo(*next);
    }
    advanceTo(end);
    settle();
    return stop && stop();
  }

 private:
  // A fixed wall-clock start: drain starts and deadlines in unix seconds are reproducible.
  static constexpr std::chrono::system_clock::time_point kWallStart{
      std::chrono::seconds(1'800'000'000)};

  struct State {
    TimePoint now{};
    unsigned long nextId = 1;
    // Timer id -> (due, handler) of its pending wait.
    std::map<unsigned long, std::pair<TimePoint, std::function<void()>>> waits;
    // Timer id -> its wait number (a posted handler of an older wait does not run).
    std::map<unsigned long, unsigned long> waitNumbers;
  };

  class ManualTimer : public core::Timer {
   public:
    ManualTimer(boost::asio::io_context& io, std::shared_ptr<State> state, unsigned long id)
        : io_(io), state_(std::move(state)), id_(id) {}
    ~ManualTimer() override { cancel(); }
    void waitUntil(TimePoint at, std::function<void()> handler) override {
      ++state_->waitNumbers[id_];
      state_->waits[id_] = {at, std::move(handler)};
      if (at <= state_->now) post(io_, state_, id_);
    }
    void cancel() override {
      ++state_->waitNumbers[id_];
      state_->waits.erase(id_);
    }
    // Posts the pending wait of timer `id` (it is no longer pending).
    static void post(boost::asio::io_context& io, const std::shared_ptr<State>& state,
                     unsigned long id) {
      auto it = state->waits.find(id);
      if (it == state->waits.end()) return;
      auto handler = std::move(it->second.second);
      state->waits.erase(it);
      boost::asio::post(io, [weak = std::weak_ptr<State>(state), id,
                             number = state->waitNumbers[id], handler = std::move(handler)] {
        const auto s = weak.lock();
        if (!s || s->waitNumbers[id] != number) return;
        handler();
      });
    }

   private:
    boost::asio::io_context& io_;
    std::shared_ptr<State> state_;
    unsigned long id_;
  };

  void fireDue() {
    for (;;) {
      std::optional<std::pair<TimePoint, unsigned long>> first;
      for (const auto& [id, w] : state_->waits)
        if (w.first <= state_->now && (!first || w.first < first->first)) first = {w.first, id};
      if (!first) return;
      ManualTimer::post(io_, state_, first->second);
    }
  }

  boost::asio::io_context& io_;
  std::function<void()> settle_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace okna::testing
