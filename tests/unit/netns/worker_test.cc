// The netns worker thread: ordered tasks off the caller's thread, results posted back to an
// io_context, heartbeats while idle, clean stop.

#include "netns/worker.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <future>

#include "core/result.h"

namespace okna::netns {
namespace {

TEST(Worker, RunsTasksInOrderOnItsOwnThread) {
  core::HealthRegistry health;
  Worker worker(&health);
  std::vector<int> order;
  std::promise<void> done;
  const auto caller = std::this_thread::get_id();
  bool allOnWorker = true;
  for (int i = 0; i < 100; ++i) {
    worker.post([&, i] {
      order.push_back(i);
      allOnWorker = allOnWorker && std::this_thread::get_id() != caller && worker.onWorkerThread();
      if (i == 99) done.set_value();
    });
  }
  done.get_future().wait();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_TRUE(allOnWorker);
}

TEST(Worker, RunThenPostDeliversTheResultOnTheLoop) {
  core::HealthRegistry health;
  // The loop outlives the worker (the agent's order): the worker's post may still be waking the
  // loop after run() returned (ThreadSanitizer saw the loop destroyed under it).
  boost::asio::io_context io;
  Worker worker(&health);
  auto guard = boost::asio::make_work_guard(io);
  std::thread::id workThread, doneThread;
  core::Status got = core::makeError("not run");
  worker.runThenPost(
      io,
      [&] {
        workThread = std::this_thread::get_id();
        return core::Status(core::makeError("EPERM from the kernel", EPERM));
      },
      [&](core::Status st) {
        doneThread = std::this_thread::get_id();
        got = st;
        guard.reset();
      });
  io.run();
  EXPECT_EQ(doneThread, std::this_thread::get_id());
  EXPECT_NE(workThread, std::this_thread::get_id());
  EXPECT_EQ(got.error().code, EPERM);
}

TEST(Worker, RunThenPostCarriesMoveOnlyResults) {
  // The loop outlives the worker (the agent's order): the worker's post may still be waking the
  // loop after run() returned (ThreadSanitizer saw the loop destroyed under it).
  boost::asio::io_context io;
  Worker worker(nullptr);
  auto guard = boost::asio::make_work_guard(io);
  int value = 0;
  worker.runThenPost(
      io, [] { return std::make_unique<int>(42); },
      [&](std::unique_ptr<int> p) {
        value = *p;
        guard.reset();
      });
  io.run();
  EXPECT_EQ(value, 42);
}

TEST(Worker, RunThenPostWithoutAResult) {
  // The loop outlives the worker (the agent's order): the worker's post may still be waking the
  // loop after run() returned (ThreadSanitizer saw the loop destroyed under it).
  boost::asio::io_context io;
  Worker worker(nullptr);
  auto guard = boost::asio::make_work_guard(io);
  bool worked = false;
  bool done = false;
  worker.runThenPost(
      io, [&] { worked = true; },
      [&] {
        done = worked;
        guard.reset();
      });
  io.run();
  EXPECT_TRUE(done);
}

TEST(Worker, BeatsItsHeartbeat) {
  core::HealthRegistry health;
  Worker worker(&health, "netns-worker", std::chrono::seconds(5));
  // A task that completes proves the thread runs; it beats before and after every task.
  std::promise<void> ran;
  worker.post([&] { ran.set_value(); });
  ran.get_future().wait();
  const auto checks = health.liveness();
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].name, "netns-worker");
  EXPECT_TRUE(checks[0].ok) << checks[0].detail;
  // Far in the future the idle beat has not happened: /healthz would fail for a wedged worker.
  EXPECT_FALSE(health.live(core::HealthRegistry::Clock::now() + std::chrono::seconds(60)));
}

TEST(Worker, StopDropsPendingTasksAndIsIdempotent) {
  core::HealthRegistry health;
  auto worker = std::make_unique<Worker>(&health);
  std::promise<void> started;
  std::promise<void> release;
  auto releaseFuture = release.get_future();
  bool laterRan = false;
  worker->post([&] {
    started.set_value();
    releaseFuture.wait();
  });
  worker->post([&] { laterRan = true; });
  started.get_future().wait();
  std::thread stopper([&] { worker->stop(); });
  // Once post() is refused, stop() has dropped the pending task; then let the running one end.
  while (worker->post([] {})) std::this_thread::yield();
  release.set_value();
  stopper.join();
  worker->stop();
  EXPECT_FALSE(worker->post([&] { laterRan = true; }));
  worker.reset();
  EXPECT_FALSE(laterRan);
}

}  // namespace
}  // namespace okna::netns
