// The launcher's files as an export ships them (path in the folder -> bytes), embedded in the
// daemon at build time from launcher/ so that an export never depends on an install path.
#pragma once

#include <map>
#include <string>

namespace cake::exporter {

const std::map<std::string, std::string>& LauncherFiles();

}  // namespace cake::exporter
