// Says, once as a suite starts, which CPU paths its numbers come from (kernels/cpu_paths.h): the
// suites whose results depend on the CPU's kernels run a second time under `make test` forced
// onto an AVX2-only machine's paths (tests/CMakeLists.txt), and a result must say which it was.
#pragma once

#include <cstdio>

#include "kernels/cpu_paths.h"

namespace trainbench {

struct CpuPathsReport {
    CpuPathsReport() { std::fprintf(stderr, "CPU paths: %s\n", kernels::cpuPathsInUse().c_str()); }
};
inline const CpuPathsReport kCpuPathsReport;

}  // namespace trainbench
