#include "core/run_loop.h"

#include <exception>

#include "core/logging.h"
#include "core/loop_thread.h"

namespace okna::core {

unsigned long runLoop(boost::asio::io_context& io,
                      const std::function<void(const std::string& what)>& onException) {
  // Loop-only code checks it runs here (OKNA_ASSERT_ON_LOOP, debug builds).
  const LoopThreadScope loopThread;
  unsigned long caught = 0;
  for (;;) {
    std::string what;
    try {
      io.run();
      return caught;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "unknown exception";
    }
    ++caught;
    logger("agent")->error("event loop: a handler threw (carrying on): {}", what);
    if (onException) onException(what);
  }
}

}  // namespace okna::core
