// What an agent's hypothesis must say before its proposal costs a job (pure): the parent it
// changes, the decisions it changes, the effect it expects and what result would refute it, each
// specific. "optimise memory" is not a hypothesis: a text with nothing but vague words or fewer
// than kMinHypothesisWords words is refused, naming the field.
#pragma once

#include "absl/status/status.h"
#include "cake/evidence.pb.h"

namespace cake::server {

inline constexpr int kMinHypothesisWords = 4;

// INVALID_ARGUMENT naming the first field that is missing or vague (hypothesis.parent,
// hypothesis.changed_decisions, hypothesis.expected_effect, hypothesis.falsification).
// Whether the parent exists is the caller's to check.
absl::Status CheckHypothesis(const evidence::Hypothesis& h);

}  // namespace cake::server
