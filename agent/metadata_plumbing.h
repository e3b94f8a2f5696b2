#pragma once
// The metadata service's worker side: the namespace worker thread and the kernel plumbing it runs
// (netns/: the ovnmeta namespaces, their veths and the listeners opened inside them), through a
// netns::Netlink the caller injects (the agent: netns::NetlinkImpl; tests: a fake kernel). The
// loop side (metadata_service.h) only posts jobs here; everything else runs on the worker thread.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "metadata/reconciler.h"
#include "netns/applier.h"
#include "netns/netlink.h"
#include "netns/worker.h"

namespace okna::core {
class HealthRegistry;
}

namespace okna::agent {

class MetadataPlumbing final : public metadata::Plumbing {
 public:
  /** Starts the worker thread (heartbeat "netns-worker" in `health`). `netlink` must outlive
   *  this object and is called on the worker thread only. */
  MetadataPlumbing(netns::Netlink& netlink, core::HealthRegistry& health);
  ~MetadataPlumbing() override;
  MetadataPlumbing(const MetadataPlumbing&) = delete;
  MetadataPlumbing& operator=(const MetadataPlumbing&) = delete;

  /** Queues `job` on the worker thread (in order); dropped after stop(). Thread-safe. */
  void post(std::function<void()> job);
  /** Stops the worker thread once its current job is done; queued jobs are dropped. */
  void stop();

  // metadata::Plumbing, on the worker thread.
  core::Result<Ensured> ensure(const metadata::NetworkPlan& network) override;
  void prepare(const std::vector<std::shared_ptr<const metadata::NetworkPlan>>& networks) override;
  core::Status remove(const std::string& namespaceName) override;
  core::Result<std::vector<std::string>> list() override;
  core::Result<int> listen(const metadata::NetworkPlan& network, const std::string& address,
                           int port) override;

 private:
  netns::Netlink& netlink_;
  netns::NamespaceApplier applier_;
  // What prepare() did per namespace, until its ensure() reports it (worker thread only).
  std::map<std::string, netns::EnsureReport> prepared_;
  // Last: its thread stops (destructor) before what its jobs use goes.
  netns::Worker worker_;
};

}  // namespace okna::agent
