// Selection: the one policy behind kernel="auto", for every entry point (numpy arrays,
// GPU arrays, the C++ Context).
//
// It sees the real problem: M, N, K, transposes, alpha/beta and the accuracy the caller
// asked for. Candidates are the kernels marked auto_candidate that accept the problem
// and whose precision class the accuracy allows; the vendor baseline is among them, so
// "auto" is never slower than the call it replaces. The first problem of a shape class
// times every candidate through the call users make (Kernel::run_once) on that
// problem's own dimensions, rejects any candidate whose result fails verification, and
// keeps the winner for the class. With timing off (FASTGEMM_AUTOTUNE=0) a documented
// heuristic per backend decides instead. backend "auto" extends the choice to the
// backends: a problem whose transfers to a GPU cost more than they save stays on the CPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kernel.hpp"

namespace fastgemm {

// The accuracy a caller accepts. Each admits a set of precision classes, never one
// weaker than asked for:
//   fp32    FP32-accurate results: classes fp32 and fp32x3 (the default)
//   strict  every product and sum in FP32: class fp32 only
//   tf32    relaxed: any class, tf32 included
enum class Accuracy { fp32, strict, tf32 };
const char* to_string(Accuracy a);
// "fp32", "strict", "tf32"; throws NotFoundError naming the accepted values.
Accuracy parse_accuracy(const std::string& name);
bool allows(Accuracy a, Precision p);

// The kernel kernel="auto" runs for `p`. backend: a backend name, or "auto" to choose
// the backend as well. Throws BackendUnavailableError / NotFoundError for a bad
// backend and ConstraintError when no candidate accepts the problem.
const Kernel& select_kernel(const std::string& backend, const Problem& p,
                            Accuracy accuracy = Accuracy::fp32);

// The shape class of a problem: the key the tuning table is kept under.
std::string shape_class(const std::string& backend, const Problem& p,
                        Accuracy accuracy = Accuracy::fp32);

// shape class -> kernel name, for persistence (python/fastgemm/autotune.py). Loading
// validates every entry against the registry and the class's candidate set and
// returns the number of entries it discarded.
std::map<std::string, std::string> tuning_table();
int load_tuning_table(const std::map<std::string, std::string>& table);

}  // namespace fastgemm
