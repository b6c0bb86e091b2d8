// Status propagation helpers. Abseil 20220623 has no RETURN_IF_ERROR, so these are defined once
// here for the whole project.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define CAKE_CONCAT_INNER_(a, b) a##b
#define CAKE_CONCAT_(a, b) CAKE_CONCAT_INNER_(a, b)

// The status variable's name is unique per use, so uses nest (one inside a lambda inside
// another) without shadowing.
#define CAKE_RETURN_IF_ERROR(expr) \
  CAKE_RETURN_IF_ERROR_IMPL_(CAKE_CONCAT_(cake_status_, __COUNTER__), expr)
#define CAKE_RETURN_IF_ERROR_IMPL_(var, expr) \
  do {                                        \
    const ::absl::Status var = (expr);        \
    if (!var.ok()) return var;                \
  } while (0)

#define CAKE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(*tmp)

#define CAKE_ASSIGN_OR_RETURN(lhs, expr) \
  CAKE_ASSIGN_OR_RETURN_IMPL_(CAKE_CONCAT_(cake_statusor_, __COUNTER__), lhs, expr)
