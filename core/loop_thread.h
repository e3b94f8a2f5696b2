#pragma once
// Debug-build checks that loop-only code runs on the event loop's thread. The agent has one
// io_context thread; the IDL thread and the namespace worker hand their results to it by posting.
// Code that touches loop-owned state from another thread is a data race that tests may never
// catch, so the loop-only entry points (the appliers' public methods, the metadata service's
// loop side, the metadata server) say OKNA_ASSERT_ON_LOOP(): in a debug build it aborts, naming
// the function, when a loop thread is marked and the caller is not it. Release builds compile it
// out. core::runLoop() marks the thread running it; tests that run their own io_context mark
// nothing, and nothing is checked.

#include <thread>

namespace okna::core {

/** Marks the calling thread as the event loop's until destroyed (the previous mark, if any, is
 *  restored then). */
class LoopThreadScope {
 public:
  LoopThreadScope();
  ~LoopThreadScope();
  LoopThreadScope(const LoopThreadScope&) = delete;
  LoopThreadScope& operator=(const LoopThreadScope&) = delete;

 private:
  std::thread::id previous_;
};

/** The marked loop thread (a default-constructed id: none is marked). */
std::thread::id loopThreadId();

/** Aborts with `file`:`line` and `function` when a loop thread is marked and the caller is not
 *  it. Always compiled; OKNA_ASSERT_ON_LOOP() calls it in debug builds only. */
void checkOnLoop(const char* file, int line, const char* function);

}  // namespace okna::core

#ifdef NDEBUG
#define OKNA_ASSERT_ON_LOOP() static_cast<void>(0)
#else
#define OKNA_ASSERT_ON_LOOP() ::okna::core::checkOnLoop(__FILE__, __LINE__, __func__)
#endif
