#include "netns/applier.h"

#include <algorithm>
#include <cerrno>

#include "core/logging.h"

namespace okna::netns {
namespace {

core::Error withContext(const std::string& context, const core::Error& e) {
  return core::makeError(context + ": " + e.message, e.code);
}

// The kernel can need a second pass (a MAC change on a live link leaves the old link-local
// address, which the next diff removes); more than this means something fights us.
constexpr int kMaxRounds = 3;

bool isIpv6(const std::string& cidr) {
  return cidr.find(':') != std::string::npos;
}

// The errors of an IPv6 address add on a kernel or link with IPv6 off: ipv6.disable=1 leaves
// rtnetlink without an AF_INET6 address handler (EOPNOTSUPP; EAFNOSUPPORT from some paths),
// net.ipv6.conf.<if>.disable_ipv6=1 refuses it (EACCES).
bool ipv6IsOff(const NsOp& op, int code) {
  return op.kind == NsOpKind::AddAddress && isIpv6(op.address) &&
         (code == EOPNOTSUPP || code == EAFNOSUPPORT || code == EACCES);
}

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

core::Status NamespaceApplier::ensure(const DesiredNamespace& wanted, EnsureReport* report) {
  EnsureReport local;
  EnsureReport& r = report != nullptr ? *report : local;
  r = EnsureReport{};
  auto log = core::logger("netns");
  const std::string ctx = "namespace " + wanted.name;
  // What is asked for, less the IPv6 addresses once the kernel said IPv6 is off.
  DesiredNamespace desired = wanted;
  for (int round = 0; round < kMaxRounds; ++round) {
    auto observed = netlink_.observe(desired);
    if (!observed) return withContext(ctx + ": observe", observed.error());
    const auto ops = diffNamespace(*observed, desired);
    if (ops.empty()) {
      log->debug("{}: {}", desired.name, r.summary(desired));
      return {};
    }
    if (auto st = applyRecorded(ops, desired, r); !st) {
      if (!r.ipv6Unavailable.empty() || r.failed.empty() ||
          !ipv6IsOff(r.failed.back(), st.error().code))
        return st;
      // IPv4 keeps serving: the same namespace without its IPv6 addresses (the next round
      // applies what came after the refused op).
      r.ipv6Unavailable = st.error().message;
      r.failed.pop_back();
      std::erase_if(desired.addresses, isIpv6);
      --round;
    }
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
