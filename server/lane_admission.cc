#include "server/lane_admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cake::server {
namespace {

bool TimingJob(ledger::JobKind kind) {
  return kind == ledger::JobKind::kMeasure || kind == ledger::JobKind::kRegress;
}

// The probe names a device "0: NVIDIA H100 80GB HBM3 (9.0)"; the ordinal is where it sits, not
// what it is.
std::string WithoutOrdinal(const std::string& name) {
  const size_t colon = name.find(": ");
  if (colon == std::string::npos || colon == 0) return name;
  for (size_t i = 0; i < colon; ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(colon + 2);
}

}  // namespace

std::string DeviceProfile(const gpuqueue::Device& device) {
  return absl::StrCat(WithoutOrdinal(device.name), ", ", device.sm_count, " SMs");
}

std::vector<gpuqueue::Device> OneLanePerDevice(const std::vector<gpuqueue::Device>& found,
                                               std::vector<std::string>* dropped) {
  std::vector<gpuqueue::Device> out;
  for (const gpuqueue::Device& d : found) {
    const auto same = [&](const gpuqueue::Device& kept) {
      return !d.uuid.empty() && kept.uuid == d.uuid;
    };
    if (auto it = std::find_if(out.begin(), out.end(), same); it != out.end()) {
      dropped->push_back(absl::StrCat("device ", d.uuid, " is listed twice (as ", it->name, " and ",
                                      d.name, "); it gets one lane"));
      continue;
    }
    out.push_back(d);
  }
  return out;
}

std::string DeviceLabel(const gpuqueue::Device& device) {
  return device.uuid.empty() ? device.name : device.uuid;
}

std::vector<gpuqueue::Device> AdmittingDevices(const compiler::TargetInfo& target,
                                               const std::vector<gpuqueue::Device>& devices) {
  std::vector<gpuqueue::Device> out;
  for (const gpuqueue::Device& d : devices)
    if (compiler::RunsOn(target, d.cc_major, d.cc_minor)) out.push_back(d);
  return out;
}

std::optional<gpuqueue::Device> MeasurementDevice(const compiler::TargetInfo& target,
                                                  const std::vector<gpuqueue::Device>& devices,
                                                  const std::set<std::string>& not_answering) {
  const std::vector<gpuqueue::Device> admitting = AdmittingDevices(target, devices);
  if (admitting.empty()) return std::nullopt;
  for (const gpuqueue::Device& d : admitting)
    if (!not_answering.count(DeviceLabel(d))) return d;
  return admitting.front();
}

bool LaneAdmits(const gpuqueue::Device& lane, ledger::JobKind kind,
                const compiler::TargetInfo& target, const std::vector<gpuqueue::Device>& devices,
                const std::set<std::string>& not_answering) {
  if (!compiler::RunsOn(target, lane.cc_major, lane.cc_minor)) return false;
  if (!TimingJob(kind)) return true;
  const std::optional<gpuqueue::Device> anchor = MeasurementDevice(target, devices, not_answering);
  // None when `lane` is not one of `devices`.
  return anchor && DeviceProfile(*anchor) == DeviceProfile(lane);
}

std::string NoDeviceForTarget(const compiler::TargetInfo& target,
                              const std::vector<gpuqueue::Device>& devices) {
  if (!AdmittingDevices(target, devices).empty()) return "";
  if (devices.empty())
    return absl::StrCat("no device for target ", target.name, " on this host: it has none");
  std::vector<std::string> found;
  for (const gpuqueue::Device& d : devices)
    found.push_back(absl::StrCat(d.uuid.empty() ? absl::StrCat("device ", d.ordinal) : d.uuid,
                                 " is sm_", d.cc_major, d.cc_minor, " (", WithoutOrdinal(d.name),
                                 ")"));
  return absl::StrCat("no device for target ", target.name,
                      " on this host: ", absl::StrJoin(found, "; "));
}

}  // namespace cake::server
