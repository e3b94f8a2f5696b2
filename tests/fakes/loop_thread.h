#pragma once
// The agent's event loop on a thread of its own, for tests that drive it from the test thread
// with blocking clients. Code that touches loop-owned objects runs through run(), which waits.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <thread>
#include <type_traits>

namespace okna::testing {

class LoopThread {
 public:
  LoopThread() : guard_(io_.get_executor()), thread_([this] { io_.run(); }) {}
  ~LoopThread() { stop(); }
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;

  boost::asio::io_context& io() { return io_; }

  /** Runs `f` on the loop thread and returns its result. */
  template <typename F>
  auto run(F&& f) -> std::invoke_result_t<F> {
    using R = std::invoke_result_t<F>;
    std::packaged_task<R()> task(std::forward<F>(f));
    auto future = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return future.get();
  }

  void stop() {
    if (!thread_.joinable()) return;
    guard_.reset();
    io_.stop();
    thread_.join();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

}  // namespace okna::testing
