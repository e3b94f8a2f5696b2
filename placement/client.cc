#include "placement/client.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "placement/desired.h"
#include "placement/json_decode.h"
#include "placement/keystone.h"

namespace okna::placement {

using nlohmann::json;

namespace {

// "{what}: HTTP 409 [placement.concurrent_update] detail": Placement's own words, trimmed.
core::Error httpError(const std::string& what, const core::HttpResponse& r) {
  std::string code;
  std::string detail;
  auto j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("errors") && j["errors"].is_array() && !j["errors"].empty() &&
      j["errors"][0].is_object()) {
    const json& e = j["errors"][0];
    if (e.contains("code") && e["code"].is_string()) code = e["code"].get<std::string>();
    if (e.contains("detail") && e["detail"].is_string()) detail = e["detail"].get<std::string>();
  }
  // Placement's details are multi-line ("The resource could not be found.\n\n ..."): keep one line.
  for (auto& c : detail)
    if (c == '\n') c = ' ';
  while (detail.find("  ") != std::string::npos) detail.replace(detail.find("  "), 2, " ");
  std::string message = what + ": HTTP " + std::to_string(r.status);
  if (!code.empty()) message += " [" + code + "]";
  if (!detail.empty()) message += " " + detail;
  return core::makeError(message, static_cast<int>(r.status));
}

core::Error badBody(const std::string& what, const std::string& why) {
  return core::makeError(what + ": unexpected response body (" + why + ")", 502);
}

// The answer of a call whose body does not matter (DELETE, PUT of a name).
core::Status statusOf(const core::Result<json>& j) {
  if (!j) return j.error();
  return core::Status{};
}

std::int64_t generationOf(const json& j) {
  return j.at("resource_provider_generation").get<std::int64_t>();
}

Provider providerFrom(const json& p) {
  Provider out;
  out.uuid = p.at("uuid").get<std::string>();
  out.name = p.at("name").get<std::string>();
  if (p.contains("parent_provider_uuid") && p["parent_provider_uuid"].is_string())
    out.parentUuid = p["parent_provider_uuid"].get<std::string>();
  if (p.contains("root_provider_uuid") && p["root_provider_uuid"].is_string())
    out.rootUuid = p["root_provider_uuid"].get<std::string>();
  out.generation = p.at("generation").get<std::int64_t>();
  return out;
}

int minorOf(const std::string& v) {
  const auto dot = v.find('.');
  return dot == std::string::npos ? -1 : std::atoi(v.c_str() + dot + 1);
}

}  // namespace

bool isConcurrentUpdate(const core::Error& e) {
  return e.code == 409 && e.message.find("[placement.concurrent_update]") != std::string::npos;
}

bool isInventoryInUse(const core::Error& e) {
  return e.code == 409 && e.message.find("[placement.inventory.inuse]") != std::string::npos;
}

bool isTransient(const core::Error& e) {
  return e.code < 100 || e.code >= 500 || e.code == 429 || e.code == 401;
}

bool microversionAtLeast(const std::string& have, const std::string& need) {
  return have.starts_with("1.") && minorOf(have) >= minorOf(need);
}

ApiImpl::~ApiImpl() {
  if (inFlight_) inFlight_->cancel();
}

Task<core::Result<core::HttpResponse>> ApiImpl::call(std::string method, std::string path,
                                                     const char* microversion, std::string body) {
  // One renewal and retry after a 401: the token may have been revoked or expired early.
  for (int attempt = 0;; ++attempt) {
    auto session = co_await auth_.session(attempt > 0);
    if (!session) co_return session.error();
    core::HttpRequest r;
    r.method = method;
    r.url = session->endpoint + path;
    r.headers = {{"X-Auth-Token", session->token},
                 {"OpenStack-API-Version", std::string("placement ") + microversion},
                 {"Accept", "application/json"}};
    if (!body.empty()) r.headers["Content-Type"] = "application/json";
    // CurlHttpClient sends bodies with POSTFIELDS and a size: always a Content-Length, as uwsgi
    // cannot read chunked request bodies.
    r.body = body;
    r.tls = auth_.tls();
    r.totalTimeout = timeout_;
    ++requests_;
    auto resp = co_await send(http_, std::move(r), &inFlight_);
    inFlight_.reset();
    if (!resp)
      co_return core::makeError(method + " " + path + ": " + resp.error().message,
                                resp.error().code);
    if (resp->status == 401 && attempt == 0 && auth_.canRenew()) continue;
    co_return resp;
  }
}

Task<core::Result<json>> ApiImpl::exchange(std::string method, std::string path,
                                           const char* microversion, std::string body,
                                           long accepted, long alsoAccepted) {
  const std::string what = method + " " + path;
  auto r = co_await call(std::move(method), std::move(path), microversion, std::move(body));
  if (!r) co_return r.error();
  if (r->status != accepted && (alsoAccepted == 0 || r->status != alsoAccepted))
    co_return httpError(what, *r);
  if (r->body.empty()) co_return json();
  auto j = json::parse(r->body, nullptr, false);
  if (j.is_discarded()) co_return badBody(what, "not JSON");
  co_return j;
}

Task<core::Result<std::string>> ApiImpl::maxMicroversion() {
  auto reply = co_await exchange("GET", "/", kReadMicroversion);
  co_return decodeJson(std::move(reply), "GET /", [](const json& j) {
    std::string best;
    for (const auto& v : j.at("versions"))
      if (best.empty() || minorOf(v.at("max_version").get<std::string>()) > minorOf(best))
        best = v.at("max_version").get<std::string>();
    return best;
  });
}

Task<core::Result<std::vector<Provider>>> ApiImpl::providersInTree(const std::string& rootUuid) {
  const std::string path = "/resource_providers?in_tree=" + rootUuid;
  auto reply = co_await exchange("GET", path, kReadMicroversion);
  co_return decodeJson(std::move(reply), path, [](const json& j) {
    std::vector<Provider> out;
    for (const auto& p : j.at("resource_providers")) out.push_back(providerFrom(p));
    return out;
  });
}

Task<core::Result<std::optional<Provider>>> ApiImpl::providerByName(const std::string& name) {
  // Names may hold any character: escape the few that matter in a query string.
  std::string q;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
        c == '~') {
      q += c;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      q += buf;
    }
  }
  const std::string path = "/resource_providers?name=" + q;
  auto reply = co_await exchange("GET", path, kReadMicroversion);
  co_return decodeJson(std::move(reply), path, [](const json& j) -> std::optional<Provider> {
    const json& list = j.at("resource_providers");
    if (list.empty()) return std::nullopt;
    return providerFrom(list.at(0));
  });
}

Task<core::Result<Provider>> ApiImpl::createProvider(const std::string& name,
                                                     const std::string& uuid,
                                                     const std::string& parentUuid) {
  json body{{"name", name}, {"uuid", uuid}};
  if (!parentUuid.empty()) body["parent_provider_uuid"] = parentUuid;
  auto reply = co_await exchange("POST", "/resource_providers", kWriteMicroversion, body.dump());
  co_return decodeJson(std::move(reply), "POST /resource_providers " + name,
                       [](const json& j) { return providerFrom(j); });
}

Task<core::Status> ApiImpl::deleteProvider(const std::string& uuid) {
  auto reply =
      co_await exchange("DELETE", "/resource_providers/" + uuid, kWriteMicroversion, "", 204, 404);
  co_return statusOf(reply);
}

Task<core::Result<Provider>> ApiImpl::renameProvider(const std::string& uuid,
                                                     const std::string& name,
                                                     const std::string& parentUuid) {
  // The parent is sent too: without it, a PUT at 1.14+ would un-parent the provider.
  json body{{"name", name}};
  if (!parentUuid.empty()) body["parent_provider_uuid"] = parentUuid;
  const std::string path = "/resource_providers/" + uuid;
  auto reply = co_await exchange("PUT", path, kWriteMicroversion, body.dump());
  co_return decodeJson(std::move(reply), "PUT " + path,
                       [](const json& j) { return providerFrom(j); });
}

Task<core::Result<InventoriesView>> ApiImpl::inventories(const std::string& uuid) {
  const std::string path = "/resource_providers/" + uuid + "/inventories";
  auto reply = co_await exchange("GET", path, kReadMicroversion);
  co_return decodeJson(std::move(reply), path, [](const json& j) {
    InventoriesView v;
    v.generation = j.at("resource_provider_generation").get<std::int64_t>();
    for (const auto& [rc, inv] : j.at("inventories").items())
      v.inventories[rc] = Inventory{
          inv.at("total").get<std::int64_t>(),     inv.at("reserved").get<std::int64_t>(),
          inv.at("min_unit").get<std::int64_t>(),  inv.at("max_unit").get<std::int64_t>(),
          inv.at("step_size").get<std::int64_t>(), inv.at("allocation_ratio").get<double>()};
    return v;
  });
}

Task<core::Result<std::int64_t>> ApiImpl::putInventories(const std::string& uuid,
                                                         std::int64_t generation,
                                                         const Inventories& inventories) {
  const std::string path = "/resource_providers/" + uuid + "/inventories";
  const json body{{"resource_provider_generation", generation},
                  {"inventories", inventoriesToJson(inventories)}};
  auto reply = co_await exchange("PUT", path, kWriteMicroversion, body.dump());
  co_return decodeJson(std::move(reply), path, generationOf);
}

Task<core::Result<TraitsView>> ApiImpl::providerTraits(const std::string& uuid) {
  const std::string path = "/resource_providers/" + uuid + "/traits";
  auto reply = co_await exchange("GET", path, kReadMicroversion);
  co_return decodeJson(std::move(reply), path, [](const json& j) {
    TraitsView v;
    v.generation = j.at("resource_provider_generation").get<std::int64_t>();
    for (const auto& t : j.at("traits")) v.traits.insert(t.get<std::string>());
    return v;
  });
}

Task<core::Result<std::int64_t>> ApiImpl::putProviderTraits(const std::string& uuid,
                                                            std::int64_t generation,
                                                            const Traits& traits) {
  const std::string path = "/resource_providers/" + uuid + "/traits";
  const json body{{"resource_provider_generation", generation}, {"traits", traits}};
  auto reply = co_await exchange("PUT", path, kWriteMicroversion, body.dump());
  co_return decodeJson(std::move(reply), path, generationOf);
}

Task<core::Result<Traits>> ApiImpl::allTraits() {
  auto reply = co_await exchange("GET", "/traits", kReadMicroversion);
  co_return decodeJson(std::move(reply), "/traits", [](const json& j) {
    Traits out;
    for (const auto& t : j.at("traits")) out.insert(t.get<std::string>());
    return out;
  });
}

Task<core::Status> ApiImpl::createTrait(const std::string& name) {
  auto reply = co_await exchange("PUT", "/traits/" + name, kWriteMicroversion, "", 201, 204);
  co_return statusOf(reply);
}

Task<core::Status> ApiImpl::createResourceClass(const std::string& name) {
  auto reply =
      co_await exchange("PUT", "/resource_classes/" + name, kWriteMicroversion, "", 201, 204);
  co_return statusOf(reply);
}

Task<core::Result<Usages>> ApiImpl::usages(const std::string& uuid) {
  const std::string path = "/resource_providers/" + uuid + "/usages";
  auto reply = co_await exchange("GET", path, kReadMicroversion);
  co_return decodeJson(std::move(reply), path, [](const json& j) {
    Usages out;
    for (const auto& [rc, used] : j.at("usages").items()) out[rc] = used.get<std::int64_t>();
    return out;
  });
}

}  // namespace okna::placement

namespace okna::placement {

Task<core::Result<AggregatesView>> ApiImpl::providerAggregates(const std::string& uuid) {
  const std::string path = "/resource_providers/" + uuid + "/aggregates";
  auto reply = co_await exchange("GET", path, kAggregatesMicroversion);
  co_return decodeJson(std::move(reply), path, [](const json& j) {
    AggregatesView v;
    v.generation = generationOf(j);
    for (const auto& a : j.at("aggregates")) v.aggregates.insert(a.get<std::string>());
    return v;
  });
}

Task<core::Result<std::int64_t>> ApiImpl::putProviderAggregates(
    const std::string& uuid, std::int64_t generation, const std::set<std::string>& aggregates) {
  const std::string path = "/resource_providers/" + uuid + "/aggregates";
  const json body{{"resource_provider_generation", generation}, {"aggregates", aggregates}};
  auto reply = co_await exchange("PUT", path, kAggregatesMicroversion, body.dump());
  co_return decodeJson(std::move(reply), path, generationOf);
}

}  // namespace okna::placement
