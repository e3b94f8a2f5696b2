#pragma once
// An immutable value shared between copies: copying is a reference count, and two copies of
// the same value compare equal without looking inside. For the large parts of the IDL thread's
// snapshots (the Southbound view and the observed OVS database hold thousands of rows at 1,000
// metadata namespaces): a snapshot is published, compared and copied on every change of any
// part, and deep copies of the unchanged parts were most of the IDL thread's CPU during a cold
// start.
//
// The value is never changed in place once shared, so a copy handed to another thread stays
// valid and unchanged: the owner builds a new value and assigns it (set() keeps the old one
// when equal, so that unchanged data stays shared). mutableCopy() is for single-threaded
// builders (tests): it copies when the value is shared.

#include <memory>
#include <utility>

namespace okna::core {

template <class T>
class SharedValue {
 public:
  SharedValue() : value_(std::make_shared<const T>()) {}
  // Implicit on purpose: `snapshot.ovs = readObserved(...)` reads as the assignment it is.
  SharedValue(T value) : value_(std::make_shared<const T>(std::move(value))) {}  // NOLINT

  const T& operator*() const { return *value_; }
  const T* operator->() const { return value_.get(); }

  /** Replaces the value unless equal to it (then the shared one is kept); true if replaced. */
  bool set(T value) {
    if (value == *value_) return false;
    value_ = std::make_shared<const T>(std::move(value));
    return true;
  }

  /** A private copy to change (single-threaded builders only; see the header comment). */
  T& mutableCopy() {
    auto fresh = std::make_shared<T>(*value_);
    T& ref = *fresh;
    value_ = std::move(fresh);
    return ref;
  }

  /** The same shared value (no look inside). */
  bool sameAs(const SharedValue& other) const { return value_ == other.value_; }

  friend bool operator==(const SharedValue& a, const SharedValue& b) {
    return a.value_ == b.value_ || *a.value_ == *b.value_;
  }

 private:
  std::shared_ptr<const T> value_;
};

}  // namespace okna::core
