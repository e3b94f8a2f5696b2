// Gives freed heap back to the system after a burst of work (glibc's malloc_trim).
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

}  // namespace okna::agent
