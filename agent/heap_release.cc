#include "agent/heap_release.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string_view>

namespace okna::agent {

std::size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0;
  std::size_t resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

std::string releaseFreedHeap() {
  const std::size_t before = residentBytes();
  ::malloc_trim(0);
  const std::size_t after = residentBytes();
  char text[64];
  std::snprintf(text, sizeof text, "RSS %.1f -> %.1f MB", static_cast<double>(before) / 1e6,
                static_cast<double>(after) / 1e6);
  return text;
}

bool shouldUseOneMallocArena(const char* mallocArenaMax, const char* glibcTunables) {
  if (mallocArenaMax != nullptr) return false;
  return glibcTunables == nullptr ||
         std::string_view(glibcTunables).find("glibc.malloc.arena_max") == std::string_view::npos;
}

bool useOneMallocArena() {
  if (!shouldUseOneMallocArena(std::getenv("MALLOC_ARENA_MAX"), std::getenv("GLIBC_TUNABLES")))
    return false;
  return ::mallopt(M_ARENA_MAX, 1) == 1;
}

}  // namespace okna::agent
