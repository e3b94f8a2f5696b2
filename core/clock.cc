#include "core/clock.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace okna::core {

namespace {

class AsioTimer : public Timer {
 public:
  explicit AsioTimer(boost::asio::io_context& io) : state_(std::make_shared<State>(io)) {}
  ~AsioTimer() override { cancel(); }

  void waitUntil(std::chrono::steady_clock::time_point at, std::function<void()> handler) override {
    const unsigned long wait = ++state_->wait;
    state_->timer.expires_at(at);
    // A handler already queued with success when cancel() ran must not run: the wait number and
    // the weak state (the timer may be gone) decide, not the error code alone.
    state_->timer.async_wait([weak = std::weak_ptr<State>(state_), wait,
                              handler = std::move(handler)](const boost::system::error_code& ec) {
      const auto state = weak.lock();
      if (ec || !state || state->wait != wait) return;
      handler();
    });
  }
  void cancel() override {
    ++state_->wait;
    state_->timer.cancel();
  }

 private:
  struct State {
    explicit State(boost::asio::io_context& io) : timer(io) {}
    boost::asio::steady_timer timer;
    unsigned long wait = 0;
  };
  std::shared_ptr<State> state_;
};

}  // namespace

std::unique_ptr<Timer> AsioClock::makeTimer() {
  return std::make_unique<AsioTimer>(io_);
}

}  // namespace okna::core
