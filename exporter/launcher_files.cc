#include "exporter/launcher_files.h"

#include <cstddef>

namespace cake::exporter {

// Defined by the files exporter/CMakeLists.txt generates from launcher/.
extern const unsigned char kLauncherHeader[], kLauncherSource[], kLauncherCHeader[],
    kLauncherCSource[], kLauncherPython[], kExportCMakeLists[], kExportReadme[];
extern const size_t kLauncherHeader_size, kLauncherSource_size, kLauncherCHeader_size,
    kLauncherCSource_size, kLauncherPython_size, kExportCMakeLists_size, kExportReadme_size;

namespace {

std::string Bytes(const unsigned char* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace

const std::map<std::string, std::string>& LauncherFiles() {
  static const std::map<std::string, std::string> files = {
      {"launcher/cake_launcher.h", Bytes(kLauncherHeader, kLauncherHeader_size)},
      {"launcher/cake_launcher.cc", Bytes(kLauncherSource, kLauncherSource_size)},
      {"launcher/cake_export_c.h", Bytes(kLauncherCHeader, kLauncherCHeader_size)},
      {"launcher/cake_export_c.cc", Bytes(kLauncherCSource, kLauncherCSource_size)},
      {"launcher/cake_export.py", Bytes(kLauncherPython, kLauncherPython_size)},
      {"CMakeLists.txt", Bytes(kExportCMakeLists, kExportCMakeLists_size)},
      {"README.md", Bytes(kExportReadme, kExportReadme_size)},
  };
  return files;
}

}  // namespace cake::exporter
