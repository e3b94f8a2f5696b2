#include "netns/applier.h"

#include <algorithm>

#include "core/logging.h"

namespace okna::netns {
namespace {

core::Error withContext(const std::string& context, const core::Error& e) {
  return core::makeError(context + ": " + e.message, e.code);
}

// The kernel can need a second pass (a MAC change on a live link leaves the old link-local
// address, which the next diff removes); more than this means something fights us.
constexpr int kMaxRounds = 3;

std::string join(const std::vector<NsOp>& ops, const DesiredNamespace& d) {
  std::string s;
  for (const auto& op : ops) s += (s.empty() ? "" : ", ") + describe(op, d);
  return s;
}

}  // namespace

bool EnsureReport::created() const {
  for (const auto& op : applied) {
    if (op.kind == NsOpKind::CreateNamespace) return true;
  }
  return false;
}

std::string EnsureReport::summary(const DesiredNamespace& d) const {
  if (unchanged()) return "adopted unchanged";
  std::string s = created() ? "created (" + std::to_string(applied.size()) + " ops)"
                            : "repaired: " + join(applied, d);
  if (!failed.empty()) s += "; failed: " + join(failed, d);
  return s;
}

core::Status NamespaceApplier::ensure(const DesiredNamespace& desired, EnsureReport* report) {
  EnsureReport local;
  EnsureReport& r = report != nullptr ? *report : local;
  r = EnsureReport{};
  auto log = core::logger("netns");
  const std::string ctx = "namespace " + desired.name;
  for (int round = 0; round < kMaxRounds; ++round) {
    auto observed = netlink_.observe(desired);
    if (!observed) return withContext(ctx + ": observe", observed.error());
    const auto ops = diffNamespace(*observed, desired);
    if (ops.empty()) {
      log->debug("{}: {}", desired.name, r.summary(desired));
      return {};
    }
    if (auto st = applyRecorded(ops, desired, r); !st) return st;
  }
  auto observed = netlink_.observe(desired);
  if (!observed) return withContext(ctx + ": observe", observed.error());
  const auto left = diffNamespace(*observed, desired);
  if (left.empty()) return {};
  return core::makeError(ctx + ": still differs after " + std::to_string(kMaxRounds) +
                             " rounds: " + join(left, desired),
                         EAGAIN);
}

core::Status NamespaceApplier::prepare(const DesiredNamespace& desired, EnsureReport* report) {
  *report = EnsureReport{};
  auto observed = netlink_.observe(desired);
  if (!observed) return withContext("namespace " + desired.name + ": observe", observed.error());
  std::vector<NsOp> hostVisible;
  for (const auto& op : diffNamespace(*observed, desired)) {
    switch (op.kind) {
      case NsOpKind::CreateNamespace:
      case NsOpKind::DeleteHostIface:
      case NsOpKind::DeleteInnerIface:
      case NsOpKind::CreateVeth:
      case NsOpKind::MoveInner:
      case NsOpKind::InnerLinkUp:  // before the host end: it comes up with its carrier at once
      case NsOpKind::HostLinkUp:
        hostVisible.push_back(op);
        break;
      default:
        break;
    }
  }
  return applyRecorded(hostVisible, desired, *report);
}

core::Status NamespaceApplier::applyRecorded(const std::vector<NsOp>& ops,
                                             const DesiredNamespace& desired,
                                             EnsureReport& report) {
  std::size_t done = 0;
  const auto st = netlink_.applyAll(ops, desired, &done);
  report.applied.insert(report.applied.end(), ops.begin(), ops.begin() + static_cast<long>(done));
  if (st) return {};
  const NsOp& failed = ops[std::min(done, ops.size() - 1)];
  report.failed.push_back(failed);
  return withContext("namespace " + desired.name + ": " + describe(failed, desired), st.error());
}

core::Status NamespaceApplier::remove(const std::string& name) {
  const std::string hostIface = hostIfaceForNamespace(name);
  if (hostIface.empty() || name.find('/') != std::string::npos) {
    return core::makeError(
        "namespace " + name + ": not an " + kMetadataPrefix + " namespace, refusing to remove it",
        EINVAL);
  }
  if (auto st = netlink_.removeNamespace(name, hostIface); !st) {
    return withContext("remove namespace " + name, st.error());
  }
  return {};
}

core::Result<std::vector<std::string>> NamespaceApplier::listMetadataNamespaces() {
  return netlink_.listNamespaces(kMetadataPrefix);
}

}  // namespace okna::netns
