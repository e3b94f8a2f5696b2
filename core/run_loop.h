#pragma once
// The event loop's last line of defence: io.run() until it returns normally. A handler that
// throws is logged and reported, and the loop carries on with the next one, so that one bad
// callback does not take the agent down (components catch at their own boundaries first).

#include <boost/asio/io_context.hpp>
#include <functional>
#include <string>

namespace okna::core {

/** Runs `io` until it has no more work or is stopped; returns the number of exceptions caught.
 *  The calling thread is the marked loop thread meanwhile (core/loop_thread.h). */
unsigned long runLoop(boost::asio::io_context& io,
                      const std::function<void(const std::string& what)>& onException = {});

}  // namespace okna::core
