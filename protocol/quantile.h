// The one quantile of the protocol statistics (linear interpolation between order statistics,
// R type 7): used by the verdict, the row tables and the report alike. Pure.
#pragma once

#include <vector>

namespace cake::protocol {

// The q-quantile (0 <= q <= 1) of `v`; 0 for an empty `v`.
double Quantile(std::vector<double> v, double q);
inline double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

}  // namespace cake::protocol
