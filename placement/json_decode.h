#pragma once
// Reading an API's JSON answer: nlohmann throws on a type mismatch, and the exception stays in
// the client as a 502-coded error naming the request (Placement's and Nova's clients).

#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"

namespace okna::placement {

/** The answer `j` read by `f`, or its error; a body of the wrong shape is "what: unexpected
 *  response body (why)", code 502. */
template <typename F>
auto decodeJson(core::Result<nlohmann::json> j, const std::string& what, F&& f)
    -> core::Result<decltype(f(nlohmann::json()))> {
  if (!j) return j.error();
  try {
    return f(*j);
  } catch (const nlohmann::json::exception& e) {
    return core::makeError(what + ": unexpected response body (" + e.what() + ")", 502);
  }
}

}  // namespace okna::placement
