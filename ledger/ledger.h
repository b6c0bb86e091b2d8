// The evidence ledger: one SQLite file in WAL mode (synchronous=FULL) with versioned migrations,
// and the stores that own its tables. No SQL exists outside ledger/.
//
//   contracts()   contracts, incumbents, promotions                     (contracts.h)
//   candidates()  candidates, hypotheses                                (candidates.h)
//   evidence()    analysis reports, receipts, validations, measurements,
//                 evidence records                                      (evidence_store.h)
//   jobs()        the durable job queue, attempts, Measure keys         (jobs.h)
//   events()      the event log                                         (events.h)
//   searches()    searches and the cost-model calibrations they fitted  (searches.h)
//
// File format: application_id 0x43414B45 ("CAKE"); user_version = schema version. Open refuses a
// foreign SQLite file (other application_id, or ours missing on a non-empty database) and a
// newer schema, and never writes to them. Tables (schema v1):
//   contracts(id, name, body)                 immutable (trigger refuses UPDATE/DELETE)
//   incumbents(contract_id, candidate_id)     current incumbent per contract
//   promotions(contract_id, candidate_id, previous_id, reason)
//   candidates(id, seq, contract_id, schedule_hash, schedule_text, state, rejected_at, ...)
//   hypotheses(candidate_id, body)
//   jobs(id, candidate_id, kind, state, attempt, boot_id, request, error, worker_pid, ...)
//   job_attempts(job_id, attempt, outcome, error)  UNIQUE(job_id, attempt): exactly-once records
//   analysis_reports / receipts(candidate_id, target, body) ; artifacts(key, dir, cubin_sha256)
//   validations(candidate_id, job_id, passed, body)
//   measurements(candidate_id, incumbent_id, run, verdict, body) + measurement_samples
//   events(id, created_ms, kind, candidate_id, job_id, message)
// Schema v2 adds:
//   evidence_records(candidate_id, job_id, kind, tool, status, body)  one row per record, never
//     updated: the latest (highest id) per kind and tool is current
//   measurements.invalid / invalid_reason         an invalid run is kept but never ranked
//   measurement_samples.mode, cache, discarded, incumbent/challenger_sm_mhz, temperature_c,
//     power_w, incumbent/challenger_span_us      (NULL where not read)
// Schema v3 adds:
//   contracts.body_sha256                     checked on every read: a flipped bit is refused
//   measure_requests(idempotency_key, candidate_id, job_id)  a retried Measure queues nothing
//   write_probe(id, at_ms)                    written at open: a full disk refuses the start
//   job_attempts.outcome 'SHUTDOWN'           killed by a graceful stop: re-queued, not counted
// Schema v4 keeps every shape as a workload's arm of contract.ProblemShape: stored contracts,
//   validations and evidence records are rewritten from the GEMM-only fields they had.
// Schema v8 adds searches(id, contract_id, state, deadline_ms, body) and calibrations(device,
//   operation, samples, held_out_tau, body): ledger/searches.h.
// Opening an older ledger migrates it to v4 in one transaction.
//
// Values (requests, reports, record bodies) above kMaxBoundBytes (sqlite.h, 32 MiB) are refused
// with RESOURCE_EXHAUSTED, whatever table they are for.
//
// Thread-safety: every store's methods are safe to call from any thread (one connection,
// serialized). Atomically() runs calls of any stores in one IMMEDIATE transaction. Never carry a
// Ledger across fork(); workers get no database handle.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "candidates.h"
#include "contracts.h"
#include "events.h"
#include "evidence_store.h"
#include "jobs.h"
#include "searches.h"

namespace cake::ledger {

class Connection;
class Db;

inline constexpr int64_t kApplicationId = 0x43414B45;  // "CAKE"
inline constexpr int kSchemaVersion = 9;

class Ledger {
 public:
  // Opens (creating or migrating) the ledger at `path`. FailedPrecondition for a foreign or newer
  // file, DataLoss for a corrupt one; the file is left untouched in both cases.
  static absl::StatusOr<std::unique_ptr<Ledger>> Open(const std::string& path);
  ~Ledger();

  // Runs fn inside one IMMEDIATE transaction (nested calls join it).
  absl::Status Atomically(const std::function<absl::Status()>& fn);

  ContractStore& contracts() { return *contracts_; }
  CandidateStore& candidates() { return *candidates_; }
  EvidenceStore& evidence() { return *evidence_; }
  JobQueue& jobs() { return *jobs_; }
  EventLog& events() { return *events_; }
  SearchStore& searches() { return *searches_; }

  const std::string& path() const { return path_; }

 private:
  Ledger();
  Db& db();
  absl::Status Migrate();
  absl::Status MigrateToV3();
  absl::Status MigrateToV4();
  absl::Status MigrateToV5();
  absl::Status ProbeWrite();

  std::string path_;
  std::unique_ptr<Connection> conn_;
  std::unique_ptr<EventLog> events_;
  std::unique_ptr<ContractStore> contracts_;
  std::unique_ptr<EvidenceStore> evidence_;
  std::unique_ptr<CandidateStore> candidates_;
  std::unique_ptr<JobQueue> jobs_;
  std::unique_ptr<SearchStore> searches_;
};

}  // namespace cake::ledger
