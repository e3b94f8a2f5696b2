#pragma once
// The dedicated thread that runs namespace work (setns, netlink, mounts) off the event loop.
// Tasks run in the order they were posted. The thread beats the "netns-worker" heartbeat at least
// every `kIdleBeat` while idle and before and after each task, so /healthz notices a wedged
// worker; each task must be bounded (netlink calls are) and shorter than `maxSilence`.
//
// Results go back to the event loop by posting to its io_context: see runThenPost().

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "core/health.h"

namespace okna::netns {

class Worker {
 public:
  static constexpr std::chrono::milliseconds kIdleBeat{500};

  /** Starts the thread; registers heartbeat `name` in `health` (if given). */
  explicit Worker(core::HealthRegistry* health, std::string name = "netns-worker",
                  std::chrono::milliseconds maxSilence = std::chrono::seconds(30));
  /** stop(). */
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /** Queues `task`; false (and dropped) once stop() has begun. Thread-safe. */
  bool post(std::function<void()> task);

  /**
   * Runs `work()` on the worker, then `done(result)` (or `done()` when `work` returns void) on
   * `io`'s thread. Move-only results are fine. `io` must outlive the worker; if `io` is stopped
   * first, `done` is dropped.
   */
  template <class F, class Done>
  void runThenPost(boost::asio::io_context& io, F work, Done done) {
    auto shared = std::make_shared<std::pair<F, Done>>(std::move(work), std::move(done));
    post([&io, shared] {
      using R = decltype(shared->first());
      if constexpr (std::is_void_v<R>) {
        shared->first();
        boost::asio::post(io, [shared] { shared->second(); });
      } else {
        auto result = std::make_shared<R>(shared->first());
        boost::asio::post(io, [shared, result] { shared->second(std::move(*result)); });
      }
    });
  }

  /**
   * Lets the running task finish, drops the tasks not started yet and joins the thread (the
   * heartbeat then goes silent: stop at shutdown only). Idempotent; not from a task.
   */
  void stop();

  /** True on the worker thread (for assertions). */
  bool onWorkerThread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void run();
  void beat();

  core::HealthRegistry* health_;
  std::string name_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace okna::netns
