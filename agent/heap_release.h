// The agent's heap policy: one malloc arena for all threads, and freed heap given back to the
// system after a burst of work (glibc's malloc_trim).
#pragma once

#include <cstddef>
#include <string>

namespace okna::agent {

/** Resident set size of this process in bytes (/proc/self/statm), 0 if unreadable. */
std::size_t residentBytes();

/** Returns the pages of freed heap chunks in every malloc arena to the system and says what it
 *  did ("RSS 42.1 -> 41.4 MB"). After a burst (1,000 namespaces set up at start) the heap keeps
 *  the burst's freed temporaries (replies parsed, plans and diffs of every network) as free
 *  chunks between live ones; glibc only trims an arena's top by itself. */
std::string releaseFreedHeap();

/** Whether the agent should limit malloc to one arena: yes unless the environment already
 *  chooses (MALLOC_ARENA_MAX, or glibc.malloc.arena_max in GLIBC_TUNABLES); null means unset. */
bool shouldUseOneMallocArena(const char* mallocArenaMax, const char* glibcTunables);

/** Makes every thread allocate from the main arena (mallopt M_ARENA_MAX 1) unless the
 *  environment chooses. Call before any thread starts. glibc gives each thread that allocates
 *  its own arena: the IDL thread's replicas and the namespace worker's temporaries then fragment
 *  apart from the loop's heap, and a warm start with 1,000 networks held 2.4 MB more (40.7 vs
 *  38.3 MB). The hot paths allocate on one thread each, from per-thread caches (tcache) first, so
 *  the shared arena's lock is rarely contended. Returns whether it limited the arenas. */
bool useOneMallocArena();

}  // namespace okna::agent
