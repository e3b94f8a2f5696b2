// core/loop_thread.h: loop-only code called off the marked loop thread aborts (debug builds), and
// nothing is checked while no loop thread is marked (tests that run their own io_context).
#include "core/loop_thread.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <thread>

#include "core/run_loop.h"

namespace okna::core {
namespace {

void loopOnly() {
  OKNA_ASSERT_ON_LOOP();
}

void onAnotherThread(void (*f)()) {
  std::thread other(f);
  other.join();
}

TEST(LoopThreadTest, RunLoopMarksItsThreadWhileItRuns) {
  EXPECT_EQ(loopThreadId(), std::thread::id{});
  boost::asio::io_context io;
  std::thread::id seen;
  boost::asio::post(io, [&] { seen = loopThreadId(); });
  runLoop(io);
  EXPECT_EQ(seen, std::this_thread::get_id());
  EXPECT_EQ(loopThreadId(), std::thread::id{}) << "unmarked once the loop returns";
}

TEST(LoopThreadTest, NothingIsCheckedWhileNoLoopIsMarkedNorOnTheLoop) {
  onAnotherThread([] { checkOnLoop(__FILE__, __LINE__, "unmarked"); });
  const LoopThreadScope loop;
  checkOnLoop(__FILE__, __LINE__, "on the loop");
  loopOnly();
  {
    const LoopThreadScope inner;
    EXPECT_EQ(loopThreadId(), std::this_thread::get_id());
  }
  EXPECT_EQ(loopThreadId(), std::this_thread::get_id()) << "the outer mark is restored";
}

TEST(LoopThreadDeathTest, TheCheckAbortsOffTheLoopNamingTheFunction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        const LoopThreadScope loop;
        onAnotherThread([] { checkOnLoop("file.cc", 7, "Reconciler::update"); });
      },
      "file.cc:7: Reconciler::update: loop-only code called off the event loop thread");
}

#ifndef NDEBUG
TEST(LoopThreadDeathTest, TheAssertionFiresOffTheLoopInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        const LoopThreadScope loop;
        onAnotherThread(loopOnly);
      },
      "loopOnly: loop-only code called off the event loop thread");
}
#else
TEST(LoopThreadTest, TheAssertionIsCompiledOutInReleaseBuilds) {
  const LoopThreadScope loop;
  onAnotherThread(loopOnly);  // would abort in a debug build
  SUCCEED();
}
#endif

}  // namespace
}  // namespace okna::core
