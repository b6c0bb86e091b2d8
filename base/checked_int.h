// Sizes, offsets, counts and their products (the compiler's analysis, the workloads' shapes):
// 64-bit integers whose arithmetic cannot wrap. A result that does not fit becomes "overflowed", stays so through every later operation,
// and exceeds every limit, so a budget check on it fails closed (a schedule that asks for 2^60
// elements is over budget, never 0 B). Header-only; a value type, thread-compatible.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace cake::base {

class CheckedInt {
 public:
  constexpr CheckedInt() = default;
  constexpr CheckedInt(int64_t v) : value_(v) {}  // NOLINT(google-explicit-constructor)

  static constexpr CheckedInt Overflowed() {
    CheckedInt c;
    c.ok_ = false;
    return c;
  }

  constexpr bool ok() const { return ok_; }
  // The value; INT64_MAX once overflowed (so a saturated figure still reads as "too large").
  constexpr int64_t value() const { return ok_ ? value_ : std::numeric_limits<int64_t>::max(); }
  // True when the value is above `limit` or unknown: the fail-closed comparison.
  constexpr bool Exceeds(int64_t limit) const { return !ok_ || value_ > limit; }
  std::string ToString() const { return ok_ ? absl::StrCat(value_) : "overflow (> 2^63)"; }

  friend CheckedInt operator+(CheckedInt a, CheckedInt b) {
    int64_t r = 0;
    if (!a.ok_ || !b.ok_ || __builtin_add_overflow(a.value_, b.value_, &r)) return Overflowed();
    return r;
  }
  friend CheckedInt operator-(CheckedInt a, CheckedInt b) {
    int64_t r = 0;
    if (!a.ok_ || !b.ok_ || __builtin_sub_overflow(a.value_, b.value_, &r)) return Overflowed();
    return r;
  }
  friend CheckedInt operator*(CheckedInt a, CheckedInt b) {
    int64_t r = 0;
    if (!a.ok_ || !b.ok_ || __builtin_mul_overflow(a.value_, b.value_, &r)) return Overflowed();
    return r;
  }
  // Division and remainder by a positive divisor; anything else is not a size.
  friend CheckedInt operator/(CheckedInt a, CheckedInt b) {
    if (!a.ok_ || !b.ok_ || b.value_ <= 0) return Overflowed();
    return a.value_ / b.value_;
  }
  friend CheckedInt operator%(CheckedInt a, CheckedInt b) {
    if (!a.ok_ || !b.ok_ || b.value_ <= 0) return Overflowed();
    return a.value_ % b.value_;
  }
  CheckedInt& operator+=(CheckedInt b) { return *this = *this + b; }
  CheckedInt& operator*=(CheckedInt b) { return *this = *this * b; }

  // Equality only between known values: an overflowed figure equals nothing.
  friend bool operator==(CheckedInt a, CheckedInt b) {
    return a.ok_ && b.ok_ && a.value_ == b.value_;
  }

 private:
  int64_t value_ = 0;
  bool ok_ = true;
};

// `v` rounded up to a multiple of `align` (> 0).
inline CheckedInt AlignUp(CheckedInt v, int64_t align) { return (v + (align - 1)) / align * align; }

}  // namespace cake::base
