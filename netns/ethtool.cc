#include "netns/ethtool.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "netns/enter.h"
#include "netns/netlink.h"

namespace okna::netns {
namespace detail {
namespace {

// The features that make TCP leave with a partial checksum or as one large segment: every
// tx checksum, every TCP segmentation flavour (tso, tso6, ecn, mangleid, accecn on newer
// kernels) and GSO. The legacy ETHTOOL_STSO misses the newer TCP flavours, hence the feature
// names (ETHTOOL_GSTRINGS / GFEATURES / SFEATURES, what `ethtool -K` uses).
bool isTargetFeature(const std::string& name) {
  return name.rfind("tx-checksum", 0) == 0 || name.rfind("tx-tcp", 0) == 0 ||
         name == "tx-generic-segmentation";
}

core::Error sysError(const std::string& what, int err) {
  return core::makeError(what + ": " + std::strerror(err), err);
}

// SIOCETHTOOL acts in the namespace of the socket, which is the calling thread's.
class Ethtool {
 public:
  explicit Ethtool(std::string iface) : iface_(std::move(iface)) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  }
  ~Ethtool() {
    if (fd_ >= 0) ::close(fd_);
  }
  Ethtool(const Ethtool&) = delete;
  Ethtool& operator=(const Ethtool&) = delete;

  core::Status call(void* data, const char* step) {
    if (fd_ < 0) return sysError("ethtool socket", errno);
    if (iface_.size() >= IFNAMSIZ) return core::makeError("interface " + iface_ + ": bad name");
    ifreq request{};
    std::memcpy(request.ifr_name, iface_.c_str(), iface_.size());
    request.ifr_data = static_cast<char*>(data);
    if (::ioctl(fd_, SIOCETHTOOL, &request) < 0) {
      return sysError("ethtool " + iface_ + " (" + step + ")", errno);
    }
    return {};
  }

  // Indices of the target features and the current feature blocks.
  struct Features {
    std::vector<uint32_t> targets;
    std::vector<ethtool_get_features_block> blocks;
  };

  core::Result<Features> read() {
    // The number of feature names.
    std::vector<uint32_t> info((sizeof(ethtool_sset_info) + sizeof(uint32_t)) / 4 + 1, 0);
    auto* sset = reinterpret_cast<ethtool_sset_info*>(info.data());
    sset->cmd = ETHTOOL_GSSET_INFO;
    sset->sset_mask = 1ULL << ETH_SS_FEATURES;
    if (auto st = call(sset, "feature count"); !st) return st.error();
    const uint32_t count = sset->sset_mask != 0 ? sset->data[0] : 0;
    // Their names.
    std::vector<uint32_t> strings((sizeof(ethtool_gstrings) + count * ETH_GSTRING_LEN) / 4 + 1);
    auto* gs = reinterpret_cast<ethtool_gstrings*>(strings.data());
    gs->cmd = ETHTOOL_GSTRINGS;
    gs->string_set = ETH_SS_FEATURES;
    gs->len = count;
    if (auto st = call(gs, "feature names"); !st) return st.error();
    Features f;
    for (uint32_t i = 0; i < count; ++i) {
      const char* name = reinterpret_cast<const char*>(gs->data) + i * ETH_GSTRING_LEN;
      if (isTargetFeature(std::string(name, strnlen(name, ETH_GSTRING_LEN)))) {
        f.targets.push_back(i);
      }
    }
    // Their state.
    const uint32_t blocks = (count + 31) / 32;
    std::vector<uint32_t> get(
        (sizeof(ethtool_gfeatures) + blocks * sizeof(ethtool_get_features_block)) / 4 + 1);
    auto* gf = reinterpret_cast<ethtool_gfeatures*>(get.data());
    gf->cmd = ETHTOOL_GFEATURES;
    gf->size = blocks;
    if (auto st = call(gf, "get features"); !st) return st.error();
    f.blocks.assign(gf->features, gf->features + blocks);
    return f;
  }

 private:
  std::string iface_;
  int fd_ = -1;
};

bool bit(uint32_t word, uint32_t index) {
  return (word >> (index % 32)) & 1U;
}

// On and changeable: a feature fixed on by the driver cannot be helped and is not reported.
bool needsTurningOff(const ethtool_get_features_block& b, uint32_t i) {
  return bit(b.active, i) && bit(b.available, i);
}

}  // namespace

core::Result<bool> offloadsOff(const std::string& iface) {
  Ethtool e(iface);
  auto f = e.read();
  if (!f) return f.error();
  for (uint32_t i : f->targets) {
    if (needsTurningOff(f->blocks[i / 32], i)) return false;
  }
  return true;
}

core::Status turnOffloadsOff(const std::string& iface) {
  Ethtool e(iface);
  auto f = e.read();
  if (!f) return f.error();
  const auto blocks = static_cast<uint32_t>(f->blocks.size());
  std::vector<uint32_t> set(
      (sizeof(ethtool_sfeatures) + blocks * sizeof(ethtool_set_features_block)) / 4 + 1);
  auto* sf = reinterpret_cast<ethtool_sfeatures*>(set.data());
  sf->cmd = ETHTOOL_SFEATURES;
  sf->size = blocks;
  bool any = false;
  for (uint32_t i : f->targets) {
    if (!needsTurningOff(f->blocks[i / 32], i)) continue;
    sf->features[i / 32].valid |= 1U << (i % 32);  // requested stays 0: off
    any = true;
  }
  if (!any) return {};
  // A positive return means "applied, but other features changed too" (e.g. TSO with csum).
  return e.call(sf, "set features");
}

}  // namespace detail

core::Status disableOffloads(const std::string& namespaceName, const std::string& iface) {
  return runInNamespace(namespaceName, [&] { return detail::turnOffloadsOff(iface); });
}

}  // namespace okna::netns
