// The exclusive queue's lanes with real threads over an in-memory job list: one job at a time per
// device and devices in parallel, every job run once, a fault probed before the device's next
// job, a device that does not answer takes none while the others go on, foreign processes
// waited out (never evicted) with the job left to another device, and a prompt stop.
// LaneWork here stands in for the orchestrator only; the daemon tests run the real one.
#include "gpuqueue/lanes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

namespace cake::gpuqueue {
namespace {

using namespace std::chrono_literals;

class FakeWork : public LaneWork {
 public:
  std::mutex mu;
  std::vector<int64_t> gpu_queue, cpu_queue;
  std::map<int64_t, int> runs;                // job -> times run
  std::map<int64_t, std::string> ran_on;      // job -> device name
  std::map<std::string, int> busy, max_busy;  // device -> running now / at most
  int cpu_busy = 0, cpu_max_busy = 0;
  std::set<int64_t> faulting;                 // jobs that report a device fault
  std::set<int64_t> breaking;                 // jobs after which their device stops answering
  std::map<std::string, int> probes_failing;  // device -> probes left that fail
  std::vector<std::string> log;               // "run:J@D", "probe:D:ok|fail"
  std::vector<std::string> foreign_waits;
  std::chrono::milliseconds job_time{20ms};

  std::map<int64_t, std::set<std::string>> admitted_on;  // job -> the only devices it may run on

  std::vector<int64_t> Queued(const Device* d) override {
    std::lock_guard<std::mutex> l(mu);
    if (d == nullptr) return cpu_queue;
    std::vector<int64_t> out;
    for (int64_t j : gpu_queue)
      if (!admitted_on.count(j) || admitted_on[j].count(d->name)) out.push_back(j);
    return out;
  }
  bool Run(int64_t job, const Device* d) override {
    const std::string name = d ? d->name : "cpu";
    {
      std::lock_guard<std::mutex> l(mu);
      auto& q = d ? gpu_queue : cpu_queue;
      q.erase(std::remove(q.begin(), q.end(), job), q.end());  // RUNNING: no longer queued
      ++runs[job];
      ran_on[job] = name;
      log.push_back("run:" + std::to_string(job) + "@" + name);
      if (d) {
        max_busy[name] = std::max(max_busy[name], ++busy[name]);
      } else {
        cpu_max_busy = std::max(cpu_max_busy, ++cpu_busy);
      }
    }
    std::this_thread::sleep_for(job_time);
    std::lock_guard<std::mutex> l(mu);
    if (breaking.count(job)) probes_failing[name] = 1000;
    if (d) {
      --busy[name];
    } else {
      --cpu_busy;
    }
    return faulting.count(job) > 0;
  }
  std::string Probe(const Device& d, int64_t) override {
    std::lock_guard<std::mutex> l(mu);
    const bool fail = probes_failing[d.name] > 0;
    if (fail) --probes_failing[d.name];
    log.push_back("probe:" + d.name + (fail ? ":fail" : ":ok"));
    return fail ? "CUDA_ERROR_LAUNCH_FAILED" : "";
  }
  void OnForeignWait(const Device& d, size_t n) override {
    std::lock_guard<std::mutex> l(mu);
    foreign_waits.push_back(d.name + ":" + std::to_string(n));
  }
  bool Done(size_t jobs) {
    std::lock_guard<std::mutex> l(mu);
    return gpu_queue.empty() && cpu_queue.empty() && runs.size() >= jobs &&
           std::all_of(busy.begin(), busy.end(), [](auto& b) { return b.second == 0; }) &&
           cpu_busy == 0;
  }
};

class FakeForeign : public ForeignProcesses {
 public:
  std::mutex mu;
  std::map<std::string, size_t> count;
  absl::StatusOr<size_t> Count(const Device& d) override {
    std::lock_guard<std::mutex> l(mu);
    return count[d.name];
  }
};

std::vector<Device> TwoDevices() { return {{0, "gpu0", "GPU-a"}, {1, "gpu1", "GPU-b"}}; }

LaneOptions Fast(int cpu_lanes = 2) {
  LaneOptions o;
  o.cpu_lanes = cpu_lanes;
  o.idle_poll = 5ms;
  o.foreign_poll = 5ms;
  o.reprobe = 20ms;
  return o;
}

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds limit = 10s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

TEST(Lanes, OneJobPerDeviceAtATimeDevicesInParallelEachJobOnce) {
  FakeWork work;
  for (int64_t j = 1; j <= 40; ++j) work.gpu_queue.push_back(j);
  for (int64_t j = 101; j <= 120; ++j) work.cpu_queue.push_back(j);
  Lanes lanes(&work, TwoDevices(), std::make_unique<FakeForeign>(), Fast(3));
  lanes.Start();
  ASSERT_TRUE(WaitFor([&] { return work.Done(60); }));
  lanes.RequestStop();
  lanes.Join();
  std::lock_guard<std::mutex> l(work.mu);
  ASSERT_EQ(work.runs.size(), 60u);
  for (const auto& [job, n] : work.runs) EXPECT_EQ(n, 1) << "job " << job;
  EXPECT_EQ(work.max_busy["gpu0"], 1);
  EXPECT_EQ(work.max_busy["gpu1"], 1);
  int on0 = 0, on1 = 0;
  for (int64_t j = 1; j <= 40; ++j) (work.ran_on[j] == "gpu0" ? on0 : on1)++;
  EXPECT_GT(on0, 5) << "device 1 took nearly everything";
  EXPECT_GT(on1, 5) << "device 0 took nearly everything";
  EXPECT_GE(work.cpu_max_busy, 2);  // CPU jobs in parallel
  EXPECT_LE(work.cpu_max_busy, 3);
}

// A lane is offered only the jobs its device admits: a job admitted on one device never runs on
// the other, a job admitted nowhere waits without holding up the rest.
TEST(Lanes, EachLaneTakesOnlyTheJobsItsDeviceAdmits) {
  FakeWork work;
  for (int64_t j = 1; j <= 30; ++j) {
    work.gpu_queue.push_back(j);
    if (j % 3 == 0) work.admitted_on[j] = {"gpu1"};
    if (j % 3 == 1) work.admitted_on[j] = {"gpu0", "gpu1"};
  }
  work.gpu_queue.push_back(99);
  work.admitted_on[99] = {};
  Lanes lanes(&work, TwoDevices(), std::make_unique<FakeForeign>(), Fast(0));
  lanes.Start();
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> l(work.mu);
    return work.runs.size() >= 30 && work.busy["gpu0"] == 0 && work.busy["gpu1"] == 0;
  }));
  std::this_thread::sleep_for(30ms);  // several idle polls: job 99 is still offered to no lane
  lanes.RequestStop();
  lanes.Join();
  std::lock_guard<std::mutex> l(work.mu);
  EXPECT_EQ(work.runs.count(99), 0u);
  int on0 = 0;
  for (int64_t j = 1; j <= 30; ++j) {
    EXPECT_EQ(work.runs[j], 1) << "job " << j;
    if (j % 3 == 0) {
      EXPECT_EQ(work.ran_on[j], "gpu1") << "job " << j;
    }
    on0 += work.ran_on[j] == "gpu0";
  }
  EXPECT_GT(on0, 0) << "gpu0 took none of the jobs it admits";
}

TEST(Lanes, AFaultIsProbedBeforeTheDevicesNextJob) {
  FakeWork work;
  work.gpu_queue = {1, 2, 3};
  work.faulting = {1};
  Lanes lanes(&work, {{0, "gpu0", ""}}, std::make_unique<FakeForeign>(), Fast(0));
  lanes.Start();
  ASSERT_TRUE(WaitFor([&] { return work.Done(3); }));
  lanes.RequestStop();
  lanes.Join();
  std::lock_guard<std::mutex> l(work.mu);
  const std::vector<std::string> want = {"probe:gpu0:ok", "run:1@gpu0", "probe:gpu0:ok",
                                         "run:2@gpu0", "run:3@gpu0"};
  EXPECT_EQ(work.log, want);
}

TEST(Lanes, ADeviceThatStopsAnsweringTakesNoJobWhileTheOthersGoOn) {
  FakeWork work;
  work.gpu_queue = {1};
  work.admitted_on[1] = {"gpu0"};  // job 1 runs on gpu0, faults, and gpu0 answers no more
  work.faulting = {1};
  work.breaking = {1};
  Lanes lanes(&work, TwoDevices(), std::make_unique<FakeForeign>(), Fast(0));
  lanes.Start();
  ASSERT_TRUE(WaitFor([&] { return work.Done(1); }));
  {
    std::lock_guard<std::mutex> l(work.mu);
    EXPECT_EQ(work.ran_on[1], "gpu0");
    for (int64_t j = 2; j <= 10; ++j) work.gpu_queue.push_back(j);
  }
  lanes.Wake();
  ASSERT_TRUE(WaitFor([&] { return work.Done(10); }));
  // Every later job went to gpu1, and gpu0 was probed again and again.
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> l(work.mu);
    return std::count(work.log.begin(), work.log.end(), "probe:gpu0:fail") >= 2;
  }));
  {
    std::lock_guard<std::mutex> l(work.mu);
    for (int64_t j = 2; j <= 10; ++j) EXPECT_EQ(work.ran_on[j], "gpu1") << "job " << j;
  }
  bool reported = false;
  for (const auto& s : lanes.States())
    if (s.name == "gpu0") reported = s.state.find("not answering") == 0;
  EXPECT_TRUE(reported);
  lanes.RequestStop();
  lanes.Join();
}

// A device that does not answer its lane's first probe (the boot saw it; a worker that sees only
// it does not) never takes a job.
TEST(Lanes, ADeviceThatDoesNotAnswerItsFirstProbeTakesNoJob) {
  FakeWork work;
  work.probes_failing["gpu0"] = 1000;
  for (int64_t j = 1; j <= 10; ++j) work.gpu_queue.push_back(j);
  Lanes lanes(&work, TwoDevices(), std::make_unique<FakeForeign>(), Fast(0));
  lanes.Start();
  ASSERT_TRUE(WaitFor([&] { return work.Done(10); }));
  lanes.RequestStop();
  lanes.Join();
  std::lock_guard<std::mutex> l(work.mu);
  for (int64_t j = 1; j <= 10; ++j) EXPECT_EQ(work.ran_on[j], "gpu1") << "job " << j;
  EXPECT_EQ(work.log.front().rfind("probe:", 0), 0u);
}

TEST(Lanes, ForeignProcessesAreWaitedOutAndTheJobGoesElsewhere) {
  FakeWork work;
  auto foreign = std::make_unique<FakeForeign>();
  FakeForeign* f = foreign.get();
  f->count["gpu0"] = 2;
  for (int64_t j = 1; j <= 10; ++j) work.gpu_queue.push_back(j);
  Lanes lanes(&work, TwoDevices(), std::move(foreign), Fast(0));
  lanes.Start();
  ASSERT_TRUE(WaitFor([&] { return work.Done(10); }));
  {
    std::lock_guard<std::mutex> l(work.mu);
    for (int64_t j = 1; j <= 10; ++j) EXPECT_EQ(work.ran_on[j], "gpu1") << "job " << j;
    ASSERT_EQ(work.foreign_waits.size(), 1u);  // told once per wait, not per poll
    EXPECT_EQ(work.foreign_waits[0], "gpu0:2");
  }
  bool waiting = false;
  for (const auto& s : lanes.States())
    if (s.name == "gpu0") waiting = s.state == "waiting for 2 foreign process(es)";
  EXPECT_TRUE(waiting);
  // The foreign processes leave: gpu0 takes jobs again.
  {
    std::lock_guard<std::mutex> l(f->mu);
    f->count["gpu0"] = 0;
  }
  {
    std::lock_guard<std::mutex> l(work.mu);
    work.job_time = 40ms;
    for (int64_t j = 11; j <= 30; ++j) work.gpu_queue.push_back(j);
  }
  lanes.Wake();
  ASSERT_TRUE(WaitFor([&] { return work.Done(30); }));
  lanes.RequestStop();
  lanes.Join();
  std::lock_guard<std::mutex> l(work.mu);
  int on0 = 0;
  for (int64_t j = 11; j <= 30; ++j) on0 += work.ran_on[j] == "gpu0";
  EXPECT_GT(on0, 0);
}

TEST(Lanes, StopReturnsPromptlyFromIdleWaitingAndProbingLanes) {
  FakeWork work;
  auto foreign = std::make_unique<FakeForeign>();
  foreign->count["gpu0"] = 1;
  work.gpu_queue = {1};
  LaneOptions o = Fast(2);
  o.idle_poll = 10s;  // a stop must not wait for these
  o.foreign_poll = 10s;
  o.reprobe = 10s;
  Lanes lanes(&work, TwoDevices(), std::move(foreign), o);
  lanes.Start();
  std::this_thread::sleep_for(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  lanes.RequestStop();
  lanes.Join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

}  // namespace
}  // namespace cake::gpuqueue
