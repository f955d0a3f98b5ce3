// Selection: the one policy behind kernel="auto", for every entry point (numpy arrays,
// GPU arrays, the C++ Context).
//
// It sees the real problem: M, N, K, transposes, alpha/beta and the accuracy the caller
// asked for. Candidates are the kernels marked auto_candidate that accept the problem
// and whose precision class the accuracy allows; the vendor baseline is among them, so
// "auto" is never slower than the call it replaces. backend "auto" pools the
// candidates of every available backend that is a performance target (auto_priority >
// 0: not the emulator), so a problem whose transfers to a GPU cost more than they save
// stays on the CPU.
//
// The first problem of a shape class (backend, accuracy, transposes, beta == 0, and
// each of M, N, K rounded up to a power of two, uncapped) is tuned on that problem's
// own dimensions:
//   - run_selected, on the caller's operands: every candidate runs the call itself,
//     through Kernel::run_once, timed by the wall clock (transfers included), its C
//     checked at sampled elements against a float64 reference of the same operands;
//     the winner's result is what the call returns. With backend "auto", a GPU backend
//     enters one candidate, the kernel select_kernel picks for it (by device time: the
//     transfers, the same for all of its kernels, would drown their differences).
//   - select_kernel, without operands (device arrays, Context::select): on a Bench of
//     random operands of the same dimensions, for one backend by what a loop of calls
//     costs (the larger of the kernel's device time and its launch's host time, so a
//     small GPU problem goes to the kernel that is cheapest to queue), or by whole calls
//     for backend "auto"; verified by the Bench.
// Candidates are timed in interleaved rounds, at least three and then until about 10 ms
// of work in all, at most five (a call under 20 us is timed as a batch of about 20 us).
// When the first candidate's run takes longer than 0.25 s, only it and the vendor
// baselines are timed, once each. A candidate that throws or fails its check is never
// chosen. The preferred candidate (the backend's rule, below) keeps the class unless
// another is faster by more than 3%, which one noisy round cannot fake. The winner is
// kept for the class (tuning_table; the Python package saves it per machine and
// version, and validates it when loading).
// A tournament on the caller's operands lasts milliseconds, so one disturbance (a core
// taken by the hypervisor or another process for as long) can make the better kernel
// look slower in every round. run_selected's choice is therefore provisional until the
// class's calls have done ten times that tournament's time in work; the call that gets
// there runs a second tournament, in which each candidate counts at the better of its
// two rates (a disturbance only slows a run down), and its verdict is final. Provisional
// choices are saved as such (provisional_choices) and keep counting in the next process.
//
// With FASTGEMM_AUTOTUNE=0 (or off/false/no) nothing is timed: the first candidate a
// backend's preferred() names wins (the cpu backend's rules are in cpu_backend.cpp;
// others take their highest ladder step), and backend "auto" sends a problem to a GPU
// backend only when it has at least 1e10 FLOPs and every dimension is at least 256.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernel.hpp"

namespace fastgemm {

// The accuracy a caller accepts. Each admits a set of precision classes, never one
// weaker than asked for:
//   fp32    FP32-accurate results: classes fp32, fp32x3 and fp32_ozaki (the default)
//   strict  every product and sum in FP32: class fp32 only
//   tf32    relaxed: any class, tf32 included
enum class Accuracy { fp32, strict, tf32 };
const char* to_string(Accuracy a);
// "fp32", "strict", "tf32"; throws NotFoundError naming the accepted values.
Accuracy parse_accuracy(const std::string& name);
bool allows(Accuracy a, Precision p);

// C = alpha * op(A) op(B) + beta * C on the kernel the policy picks for `p` (tuning its
// shape class on these operands the first time); returns the kernel whose result C
// holds. backend: a backend name, or "auto" to choose the backend as well. Throws
// BackendUnavailableError / NotFoundError for a bad backend, ConstraintError when no
// candidate accepts the problem, and Interrupted when Ctrl-C cut the call short.
const Kernel& run_selected(const std::string& backend, const Problem& p, Accuracy accuracy, const float* A,
                           const float* B, float* C);

// The kernel kernel="auto" runs for `p`, tuning without the caller's operands.
const Kernel& select_kernel(const std::string& backend, const Problem& p,
                            Accuracy accuracy = Accuracy::fp32);

// The shape class of a problem: the key the tuning table is kept under, e.g.
// "cpu|fp32|nt|beta0|64x4096x4096".
std::string shape_class(const std::string& backend, const Problem& p,
                        Accuracy accuracy = Accuracy::fp32);

// Whether kernel="auto" times candidates (FASTGEMM_AUTOTUNE), read once per process.
bool autotune_enabled();

// shape class -> kernel name ("backend/name" for backend "auto"), for persistence.
std::map<std::string, std::string> tuning_table();

// A choice of run_selected still awaiting its second opinion: the calls of its class
// left before it, and each candidate's rate in the first tournament (FLOP/s of its best
// run, by "backend/name").
struct ProvisionalChoice {
    int64_t calls_left = 0;
    std::map<std::string, double> rates;
};
// shape class -> its provisional choice, for persistence beside tuning_table().
std::map<std::string, ProvisionalChoice> provisional_choices();

// Adds entries after validating each against the registry: a well-formed class whose
// backend exists, a kernel of that backend that is an auto candidate, of a precision
// class the accuracy allows, accepting the class's own dimensions. A class also in
// `provisional` (calls left >= 1, every rate finite and positive) is loaded as awaiting
// its second opinion, the others as confirmed. Returns the number of entries discarded
// (an unusable provisional record discards its class's entry; one without an entry
// counts too).
int load_tuning_table(const std::map<std::string, std::string>& table,
                      const std::map<std::string, ProvisionalChoice>& provisional = {});
// Forgets every choice (tests; a user who changed the machine under a process).
void clear_tuning_table();

// Changes whenever a choice is added or the table is cleared: a caller that keeps the
// kernel it was given for a problem may reuse it while this stays the same.
uint64_t tuning_generation();
// Why candidates were refused during tuning in this process ("cpu/direct: ..."), most
// recent last; at most 64 kept.
std::vector<std::string> tuning_rejections();

// One tuning in this process: the shape class it chose for, the kernel it chose and
// each candidate's best time in seconds as the tournament measured it ("backend/name";
// refused candidates are left out, tuning_rejections says why). The winner is not
// always the fastest: the first candidate and the vendor baselines keep a class unless
// beaten by more than the tournament's margin.
struct TuningRecord {
    std::string shape_class, winner;
    std::vector<std::pair<std::string, double>> seconds;
    bool second_opinion = false;  // the tournament that confirmed or replaced a first choice
};
// Most recent last; at most 64 kept.
std::vector<TuningRecord> tuning_records();

}  // namespace fastgemm
