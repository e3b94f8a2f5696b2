// Times NamespaceApplier against the real kernel: ensure on a fresh network (create), ensure on
// a correct one (the adopt/no-op path every resync takes), ensure after an address drift
// (repair), openListener inside the namespace, and remove. Root only; every object is named
// ovnmeta-oktn<random> and removed at the end. Not a test: it prints a table.
//   bench_netns [--networks N]

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "netns/applier.h"
#include "netns/netlink.h"

using namespace okna;
using Clock = std::chrono::steady_clock;

namespace {

std::string randomHex(size_t n) {
  std::random_device rd;
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "0123456789abcdef"[rd() % 16];
  return s;
}

void row(const char* phase, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) { return ms[static_cast<size_t>(q * (ms.size() - 1))]; };
  std::printf("%-22s %6zu %9.2f %9.2f %9.2f %9.2f\n", phase, ms.size(), ms.front(), at(0.5),
              at(0.95), ms.back());
}

double timeMs(const std::function<void()>& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int networks = 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--networks") == 0) networks = std::atoi(argv[++i]);
  }
  if (::geteuid() != 0) {
    std::fprintf(stderr, "bench_netns: needs root\n");
    return 2;
  }
  netns::NetlinkImpl netlink;
  netns::NamespaceApplier applier(netlink);
  std::vector<netns::DesiredNamespace> desired;
  const std::string run = randomHex(4);
  for (int i = 0; i < networks; ++i) {
    // The first 10 characters name the veths: they must differ between networks.
    char id[64];
    std::snprintf(id, sizeof(id), "oktn%s-%s-%03d", randomHex(5).c_str(), run.c_str(), i);
    char mac[32];
    std::snprintf(mac, sizeof(mac), "fa:16:3e:00:%02x:%02x", i / 256, i % 256);
    desired.push_back(*netns::metadataNamespaceFor(
        id, mac, {"10.0.0.2/24", "169.254.169.254/32", "fe80::a9fe:a9fe/64"}));
  }
  std::vector<double> create, noop, repair, listen, remove;
  int failures = 0;
  const auto check = [&](const core::Status& st) {
    if (!st) {
      ++failures;
      std::fprintf(stderr, "%s\n", st.error().message.c_str());
    }
  };
  for (const auto& d : desired) create.push_back(timeMs([&] { check(applier.ensure(d)); }));
  for (const auto& d : desired) noop.push_back(timeMs([&] { check(applier.ensure(d)); }));
  for (auto d : desired) {
    d.addresses[0] = "10.0.1.2/24";
    repair.push_back(timeMs([&] { check(applier.ensure(d)); }));
  }
  for (const auto& d : desired) {
    listen.push_back(timeMs([&] {
      auto fd = netns::openListener(d.name, "169.254.169.254", 80, 128, true);
      if (fd) {
        ::close(*fd);
      } else {
        check(fd.error());
      }
    }));
  }
  for (const auto& d : desired) remove.push_back(timeMs([&] { check(applier.remove(d.name)); }));
  std::printf("%-22s %6s %9s %9s %9s %9s\n", "phase (ms)", "n", "min", "median", "p95", "max");
  row("ensure: create", create);
  row("ensure: no-op (adopt)", noop);
  row("ensure: repair 1 addr", repair);
  row("openListener", listen);
  row("remove", remove);
  std::printf("failures: %d\n", failures);
  return failures == 0 ? 0 : 1;
}
