#include "placement/nova_client.h"

#include <nlohmann/json.hpp>

#include "placement/json_decode.h"
#include "placement/keystone.h"

namespace okna::placement {

using nlohmann::json;

NovaAggregate novaAggregateFromJson(const json& j) {
  NovaAggregate a;
  a.id = j.at("id").get<int>();
  if (j.contains("uuid") && j["uuid"].is_string()) a.uuid = j["uuid"].get<std::string>();
  a.name = j.at("name").get<std::string>();
  if (j.contains("hosts") && j["hosts"].is_array())
    for (const auto& h : j["hosts"])
      if (h.is_string()) a.hosts.insert(h.get<std::string>());
  if (j.contains("metadata") && j["metadata"].is_object())
    for (const auto& [k, v] : j["metadata"].items())
      if (v.is_string()) a.metadata[k] = v.get<std::string>();
  return a;
}

NovaApiImpl::~NovaApiImpl() {
  if (inFlight_) inFlight_->cancel();
}

Task<core::Result<json>> NovaApiImpl::exchange(std::string method, std::string path,
                                               std::string body, long accepted) {
  const std::string what = "nova " + method + " " + path;
  for (int attempt = 0;; ++attempt) {
    auto session = co_await auth_.session(attempt > 0);
    if (!session) co_return session.error();
    if (session->computeEndpoint.empty())
      co_return core::makeError(
          what +
              ": no compute endpoint (the token's catalog has no \"compute\" service at this "
              "interface; or set placement.availabilityZones.computeEndpointOverride)",
          404);
    core::HttpRequest r;
    r.method = method;
    r.url = session->computeEndpoint + path;
    r.headers = {{"X-Auth-Token", session->token},
                 {"X-OpenStack-Nova-API-Version", kNovaMicroversion},
                 {"OpenStack-API-Version", std::string("compute ") + kNovaMicroversion},
                 {"Accept", "application/json"}};
    if (!body.empty()) r.headers["Content-Type"] = "application/json";
    r.body = body;
    r.tls = auth_.tls();
    r.totalTimeout = timeout_;
    ++requests_;
    auto resp = co_await send(http_, std::move(r), &inFlight_);
    inFlight_.reset();
    if (!resp) co_return core::makeError(what + ": " + resp.error().message, resp.error().code);
    if (resp->status == 401 && attempt == 0 && auth_.canRenew()) continue;
    auto j = json::parse(resp->body, nullptr, false);
    if (resp->status != accepted) {
      // Nova's faults: {"<kind>": {"code": N, "message": "..."}}.
      std::string message;
      if (j.is_object() && !j.empty() && j.begin()->is_object() && j.begin()->contains("message") &&
          (*j.begin())["message"].is_string())
        message = " " + (*j.begin())["message"].get<std::string>();
      co_return core::makeError(what + ": HTTP " + std::to_string(resp->status) + message,
                                static_cast<int>(resp->status));
    }
    if (j.is_discarded())
      co_return core::makeError(what + ": unexpected response body (not JSON)", 502);
    co_return j;
  }
}

Task<core::Result<std::vector<NovaAggregate>>> NovaApiImpl::aggregates() {
  auto reply = co_await exchange("GET", "/os-aggregates", "", 200);
  co_return decodeJson(std::move(reply), "nova GET /os-aggregates", [](const json& j) {
    std::vector<NovaAggregate> out;
    for (const auto& a : j.at("aggregates")) out.push_back(novaAggregateFromJson(a));
    return out;
  });
}

Task<core::Result<NovaAggregate>> NovaApiImpl::createAggregate(const std::string& name,
                                                               const std::string& zone) {
  const json body{{"aggregate", {{"name", name}, {"availability_zone", zone}}}};
  auto reply = co_await exchange("POST", "/os-aggregates", body.dump(), 200);
  co_return decodeJson(std::move(reply), "nova POST /os-aggregates",
                       [](const json& j) { return novaAggregateFromJson(j.at("aggregate")); });
}

Task<core::Result<NovaAggregate>> NovaApiImpl::addHost(int id, const std::string& host) {
  const std::string path = "/os-aggregates/" + std::to_string(id) + "/action";
  const json body{{"add_host", {{"host", host}}}};
  auto reply = co_await exchange("POST", path, body.dump(), 200);
  co_return decodeJson(std::move(reply), "nova POST " + path,
                       [](const json& j) { return novaAggregateFromJson(j.at("aggregate")); });
}

Task<core::Status> NovaApiImpl::removeHost(int id, const std::string& host) {
  const std::string path = "/os-aggregates/" + std::to_string(id) + "/action";
  const json body{{"remove_host", {{"host", host}}}};
  auto reply = co_await exchange("POST", path, body.dump(), 200);
  if (!reply && reply.error().code == 404) co_return core::Status{};
  if (!reply) co_return reply.error();
  co_return core::Status{};
}

}  // namespace okna::placement
