// Autotune: kernel="auto" picks the fastest kernel that accepts the problem, from
// measurements on this machine rather than a hard-coded name.
//
// Candidates are a backend's kernels marked auto_candidate (its best rungs and its
// baselines). The first call in a shape class times each candidate on a proxy problem
// (the same transposes and scalars, each dimension rounded up to a power of two and
// capped at 1024) and remembers the winner for the class. The table can be read and
// pre-loaded, so the Python package keeps it across processes. FASTGEMM_AUTOTUNE=0
// turns the timing off: the highest-rung candidate is taken.
#pragma once

#include <map>
#include <string>

#include "kernel.hpp"

namespace fastgemm {

// The shape class of a problem on a backend, e.g. "cpu|nt|beta0|1024x1024x64".
std::string shape_class(const std::string& backend, const Problem& p);

const Kernel& select_kernel(const std::string& backend, const Problem& p);

// shape class -> kernel name, for persistence.
std::map<std::string, std::string> tuning_table();
void load_tuning_table(const std::map<std::string, std::string>& table);

}  // namespace fastgemm
