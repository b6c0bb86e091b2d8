// What an agent's hypothesis must say before its proposal costs a job (pure): the parent it
// changes, the decisions it changes, the effect it expects and what result would refute it, each
// specific. "optimise memory" is not a hypothesis: a text with nothing but vague words or fewer
// than kMinHypothesisWords words is refused, naming the field.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "cake/evidence.pb.h"

namespace cake::server {

inline constexpr int kMinHypothesisWords = 4;

// INVALID_ARGUMENT naming the first field that is missing or vague (hypothesis.parent,
// hypothesis.changed_decisions, hypothesis.expected_effect, hypothesis.falsification).
// Whether the parent exists is the caller's to check.
absl::Status CheckHypothesis(const evidence::Hypothesis& h);

inline constexpr size_t kMaxBranchNameBytes = 64;

// A branch name: 1-64 bytes of letters, digits and ". _ / -", the first a letter or a digit.
absl::Status CheckBranchName(const std::string& name);

// Whether a proposal on `branch` may change `parent` (on `parent_branch`): a branch continues
// from its own candidates or from a shared root (the contract's incumbent or baseline); a branch
// with no candidate yet forks from any candidate. INVALID_ARGUMENT naming hypothesis.parent.
absl::Status CheckParentBranch(const std::string& parent, const std::string& parent_branch,
                               const std::string& branch, int64_t candidates_on_branch,
                               bool parent_is_shared_root);

}  // namespace cake::server
