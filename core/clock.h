#pragma once
// Time as the reconcilers see it: steady time, wall time and one-shot timers, behind an interface
// so that tests drive time themselves (tests/fakes/manual_clock.h). A debounce, backoff or drain
// test then advances the clock by exactly the window it checks, and "nothing was sent before the
// window closed" is asserted at a known instant instead of after a sleep that may or may not have
// been long enough. Everything runs on the one event-loop thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace okna::core {

class Timer {
 public:
  virtual ~Timer() = default;
  /** Runs `handler` on the loop once the clock reaches `at` (at once, posted, if it has). A new
   *  wait replaces the pending one; after cancel() or destruction the handler never runs. */
  virtual void waitUntil(std::chrono::steady_clock::time_point at,
                         std::function<void()> handler) = 0;
  virtual void cancel() = 0;
};

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  /** Wall time, for what outlives the process (the drain's start in the ownership record). */
  virtual std::chrono::system_clock::time_point wallNow() const = 0;
  virtual std::unique_ptr<Timer> makeTimer() = 0;
};

/** The real clocks; timers are Asio steady timers on `io`. */
class AsioClock : public Clock {
 public:
  explicit AsioClock(boost::asio::io_context& io) : io_(io) {}
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point wallNow() const override {
    return std::chrono::system_clock::now();
  }
  std::unique_ptr<Timer> makeTimer() override;

 private:
  boost::asio::io_context& io_;
};

/** Whole seconds since the Unix epoch of the clock's wall time. */
inline std::int64_t unixSeconds(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::seconds>(clock.wallNow().time_since_epoch())
      .count();
}

}  // namespace okna::core
