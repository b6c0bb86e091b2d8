// The codecs as a filter, for the cross-check against an independent implementation
// (narrow_float_crosscheck.py):
//   narrow_float_codec decode FORMAT   one line per code: "CODE VALUE" (VALUE as C99 hex float,
//                                      "nan", "inf" or "-inf")
//   narrow_float_codec encode FORMAT   reads hex floats, one per line; writes the round-to-
//                                      nearest-even, non-saturating code of each, or "none"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "workloads/narrow_float.h"

using cake::workloads::NarrowFormat;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: narrow_float_codec decode|encode FORMAT\n";
    return 2;
  }
  const NarrowFormat* format = nullptr;
  for (const NarrowFormat& f : cake::workloads::kNarrowFormats)
    if (std::strcmp(cake::workloads::Info(f).name, argv[2]) == 0) format = &f;
  if (format == nullptr) {
    std::cerr << "narrow_float_codec: unknown format " << argv[2] << "\n";
    return 2;
  }
  if (std::strcmp(argv[1], "decode") == 0) {
    for (uint32_t c = 0; c < (1u << cake::workloads::Info(*format).bits); ++c) {
      const double v = cake::workloads::DecodeNarrow(*format, c);
      if (std::isnan(v))
        std::printf("%u nan\n", c);
      else if (std::isinf(v))
        std::printf("%u %s\n", c, v > 0 ? "inf" : "-inf");
      else
        std::printf("%u %a\n", c, v);
    }
    return 0;
  }
  if (std::strcmp(argv[1], "encode") == 0) {
    std::string line;
    while (std::getline(std::cin, line)) {
      const double v = std::strtod(line.c_str(), nullptr);
      const auto code =
          cake::workloads::EncodeNarrow(*format, v, cake::workloads::Rounding::kNearestEven,
                                        cake::workloads::Overflow::kNonSaturating);
      if (code)
        std::printf("%u\n", *code);
      else
        std::printf("none\n");
    }
    return 0;
  }
  std::cerr << "narrow_float_codec: unknown mode " << argv[1] << "\n";
  return 2;
}
