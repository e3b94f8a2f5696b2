#include "core/loop_thread.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace okna::core {

namespace {
std::atomic<std::thread::id> loopThread{};
}  // namespace

LoopThreadScope::LoopThreadScope() : previous_(loopThread.exchange(std::this_thread::get_id())) {}

LoopThreadScope::~LoopThreadScope() {
  loopThread.store(previous_);
}

std::thread::id loopThreadId() {
  return loopThread.load();
}

void checkOnLoop(const char* file, int line, const char* function) {
  const std::thread::id loop = loopThread.load();
  if (loop == std::thread::id{} || loop == std::this_thread::get_id()) return;
  // No logger: it may be what the offending thread is racing with.
  std::fprintf(stderr, "%s:%d: %s: loop-only code called off the event loop thread\n", file, line,
               function);
  std::abort();
}

}  // namespace okna::core
