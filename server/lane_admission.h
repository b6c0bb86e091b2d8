// Which device lane may take which job on a host with several devices (seed part 1 §4.3
// "Architecture admission", §15: devices are separate measurement profiles).
//
// A lane admits a job only when its device executes the job's contract target (compute
// capability checked against the target table: sm_90 on 9.0, sm_120a on 12.0, sm_121a on 12.1,
// sm_120f on any 12.x). Correctness jobs (validate, sanitize) go to any admitting device. Timing
// jobs (measure, regress) go only to devices of the contract's measurement profile: the profile
// of the first admitting device in probe order that answers its lane's probes (the first
// admitting one when none does, so timing waits for it). Identical cards share a profile, so their
// lanes share a contract's timing work; a second model on the host (an H200 beside an H100, an RTX
// 5090 beside an RTX PRO 6000) never adds samples to the first one's ranking. Each paired
// measurement runs incumbent and challenger in one worker, on one device.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/targets.h"
#include "gpuqueue/lanes.h"
#include "ledger/jobs.h"

namespace cake::server {

// "NVIDIA H100 80GB HBM3 (9.0), 132 SMs": what two devices share when their timings may be
// ranked together (the probe's name less its ordinal, and the SM count).
std::string DeviceProfile(const gpuqueue::Device& device);

// One lane per physical device: a device the probe lists twice (a CUDA_VISIBLE_DEVICES naming
// it twice) keeps its first place; `dropped` gets a line for each repeat.
std::vector<gpuqueue::Device> OneLanePerDevice(const std::vector<gpuqueue::Device>& found,
                                               std::vector<std::string>* dropped);

// How the ledger names the device a job ran on: its UUID, else the probe's name.
std::string DeviceLabel(const gpuqueue::Device& device);

// The devices that execute `target`, in probe order.
std::vector<gpuqueue::Device> AdmittingDevices(const compiler::TargetInfo& target,
                                               const std::vector<gpuqueue::Device>& devices);

// The device whose profile times a contract of `target`: the first device executing it that is
// not in `not_answering` (DeviceLabels of devices whose last probe failed), else the first
// executing it; nullopt when none does.
std::optional<gpuqueue::Device> MeasurementDevice(const compiler::TargetInfo& target,
                                                  const std::vector<gpuqueue::Device>& devices,
                                                  const std::set<std::string>& not_answering);

// Whether the lane of `lane` (one of `devices`) may take a job of `kind` for a contract whose
// execution target is `target`; `not_answering` as for MeasurementDevice.
bool LaneAdmits(const gpuqueue::Device& lane, ledger::JobKind kind,
                const compiler::TargetInfo& target, const std::vector<gpuqueue::Device>& devices,
                const std::set<std::string>& not_answering = {});

// Why no device of `devices` executes `target`: "no device for target sm_120a on this host:
// GPU-… is sm_90 (NVIDIA H100 80GB HBM3 (9.0))"; "" when one does.
std::string NoDeviceForTarget(const compiler::TargetInfo& target,
                              const std::vector<gpuqueue::Device>& devices);

}  // namespace cake::server
