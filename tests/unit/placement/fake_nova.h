#pragma once
// A stateful in-memory Nova os-aggregates behind placement::NovaApi, with Nova's answers for the
// cases the zone applier handles (measured on python3-nova 26 through
// tests/fixtures/nova/start-nova-api.sh): a taken name is 409, adding a member twice is 409,
// removing a non-member is 404. Faults: down, 403, and a hook run when a call is made (another
// agent acting at that moment).

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "placement/nova_client.h"

namespace okna::testing {

class FakeNova final : public placement::NovaApi {
 public:
  std::vector<placement::NovaAggregate> aggregates_;
  bool down = false;
  bool forbidden = false;
  std::map<std::string, int> calls;
  std::map<std::string, std::function<void()>> during;

  placement::NovaAggregate& make(const std::string& name, const std::string& zone) {
    placement::NovaAggregate a;
    a.id = static_cast<int>(aggregates_.size()) + 1;
    a.uuid = "agg-" + std::to_string(a.id);
    a.name = name;
    if (!zone.empty()) a.metadata["availability_zone"] = zone;
    aggregates_.push_back(a);
    return aggregates_.back();
  }
  placement::NovaAggregate* find(const std::string& name) {
    for (auto& a : aggregates_)
      if (a.name == name) return &a;
    return nullptr;
  }
  int total() const {
    int n = 0;
    for (const auto& [k, v] : calls) n += v;
    return n;
  }

  placement::Task<core::Result<std::vector<placement::NovaAggregate>>> aggregates() override {
    if (auto e = fail("aggregates")) co_return *e;
    co_return aggregates_;
  }
  placement::Task<core::Result<placement::NovaAggregate>> createAggregate(
      const std::string& name, const std::string& zone) override {
    if (auto e = fail("createAggregate")) co_return *e;
    if (find(name))
      co_return core::makeError(
          "nova POST /os-aggregates: HTTP 409 Aggregate " + name + " already exists.", 409);
    co_return make(name, zone);
  }
  placement::Task<core::Result<placement::NovaAggregate>> addHost(
      int id, const std::string& host) override {
    if (auto e = fail("addHost")) co_return *e;
    auto& a = aggregates_.at(static_cast<size_t>(id - 1));
    if (!a.hosts.insert(host).second)
      co_return core::makeError("HTTP 409 Aggregate already has host", 409);
    co_return a;
  }
  placement::Task<core::Status> removeHost(int id, const std::string& host) override {
    if (auto e = fail("removeHost")) co_return *e;
    aggregates_.at(static_cast<size_t>(id - 1)).hosts.erase(host);
    co_return core::Status{};
  }

 private:
  std::optional<core::Error> fail(const char* call) {
    ++calls[call];
    if (auto d = during.find(call); d != during.end()) {
      auto hook = std::move(d->second);
      during.erase(d);
      hook();
    }
    if (down) return core::makeError(std::string("nova ") + call + ": connection refused", 7);
    if (forbidden)
      return core::makeError(std::string("nova ") + call +
                                 ": HTTP 403 Policy doesn't allow os_compute_api:os-aggregates",
                             403);
    return std::nullopt;
  }
};

}  // namespace okna::testing
