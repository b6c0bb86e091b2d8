#include "events.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "connection.h"

namespace cake::ledger {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::Status EventLog::Add(const std::string& kind, const std::string& candidate, int64_t job_id,
                           const std::string& message) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(Stmt s,
                        conn_->db().Prepare("INSERT INTO events(created_ms, kind, candidate_id, "
                                            "job_id, message) VALUES (?,?,?,?,?)"));
  CAKE_RETURN_IF_ERROR(
      s.Bind(1, NowMs()).Bind(2, kind).Bind(3, candidate).Bind(4, job_id).Bind(5, message).Run());
  {
    std::lock_guard<std::mutex> l(wait_mu_);
    last_added_ = conn_->db().LastInsertId();
  }
  added_.notify_all();
  return absl::OkStatus();
}

void EventLog::WaitAfter(int64_t after_id, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(wait_mu_);
  added_.wait_for(l, timeout, [&] { return last_added_ > after_id; });
}

namespace {

constexpr const char* kEventColumns =
    "SELECT id, created_ms, kind, candidate_id, job_id, message FROM events ";

absl::StatusOr<std::vector<Event>> ReadEvents(Stmt& s) {
  std::vector<Event> out;
  while (s.Step()) {
    Event e;
    e.id = s.Int(0);
    e.created_ms = s.Int(1);
    e.kind = s.Text(2);
    e.candidate_id = s.Text(3);
    e.job_id = s.Int(4);
    e.message = s.Text(5);
    out.push_back(e);
  }
  CAKE_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Event>> EventLog::After(int64_t after_id, int limit) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(absl::StrCat(kEventColumns, "WHERE id > ? ORDER BY id LIMIT ?")));
  s.Bind(1, after_id).Bind(2, limit);
  return ReadEvents(s);
}

absl::StatusOr<std::vector<Event>> EventLog::ForCandidate(const std::string& candidate_id,
                                                          int limit) {
  auto lock = conn_->Lock();
  CAKE_ASSIGN_OR_RETURN(
      Stmt s, conn_->db().Prepare(
                  absl::StrCat(kEventColumns, "WHERE candidate_id = ? ORDER BY id DESC LIMIT ?")));
  s.Bind(1, candidate_id).Bind(2, limit);
  CAKE_ASSIGN_OR_RETURN(std::vector<Event> newest_first, ReadEvents(s));
  return std::vector<Event>(newest_first.rbegin(), newest_first.rend());
}

}  // namespace cake::ledger
