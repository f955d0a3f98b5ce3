// The selection policy (see selection.hpp).
#include "selection.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

#include "env_flag.hpp"
#include "errors.hpp"
#include "interrupt.hpp"
#include "registry.hpp"
#include "runner.hpp"

namespace fastgemm {

// --- accuracy ------------------------------------------------------------------------

const char* to_string(Accuracy a) {
    switch (a) {
        case Accuracy::fp32: return "fp32";
        case Accuracy::strict: return "strict";
        case Accuracy::tf32: return "tf32";
    }
    return "fp32";
}

Accuracy parse_accuracy(const std::string& name) {
    if (name == "fp32") return Accuracy::fp32;
    if (name == "strict") return Accuracy::strict;
    if (name == "tf32") return Accuracy::tf32;
    throw NotFoundError("unknown precision '" + name + "'; accepted: fp32 (FP32-accurate, the default), "
                        "strict (every product and sum in FP32), tf32 (relaxed inputs allowed)");
}

bool allows(Accuracy a, Precision p) {
    switch (a) {
        case Accuracy::strict: return p == Precision::fp32;
        case Accuracy::fp32: return p == Precision::fp32 || p == Precision::fp32x3 || p == Precision::fp32_ozaki;
        case Accuracy::tf32: return true;
    }
    return false;
}

namespace {

// --- shape classes -------------------------------------------------------------------

// ceil(log2(d)) for d >= 1 (0 for d <= 1): the class rounds each dimension up to 2^b.
int bucket(int64_t d) { return d <= 1 ? 0 : 64 - __builtin_clzll(uint64_t(d - 1)); }

// The backend part of a class: 0 for "auto", else 1 + the backend's registry index.
int backend_slot(const std::string& backend) {
    if (backend == "auto") return 0;
    const auto all = Registry::global().backends();
    for (size_t i = 0; i < all.size(); ++i)
        if (all[i]->name() == backend) return int(i) + 1;
    throw NotFoundError("unknown backend '" + backend + "'");
}

struct ClassKey {
    int slot = 0;
    Accuracy accuracy = Accuracy::fp32;
    bool trans_a = false, trans_b = false, beta0 = true;
    int bm = 0, bn = 0, bk = 0;

    uint64_t bits() const {
        return uint64_t(slot) << 32 | uint64_t(accuracy) << 29 | uint64_t(trans_a) << 28 | uint64_t(trans_b) << 27 |
               uint64_t(beta0) << 26 | uint64_t(bm) << 18 | uint64_t(bn) << 10 | uint64_t(bk) << 2;
    }
    std::string backend() const {
        return slot == 0 ? "auto" : Registry::global().backends()[size_t(slot - 1)]->name();
    }
    std::string text() const {
        std::ostringstream os;
        os << backend() << "|" << to_string(accuracy) << "|" << (trans_a ? 't' : 'n') << (trans_b ? 't' : 'n') << "|"
           << (beta0 ? "beta0" : "beta") << "|" << (int64_t(1) << bm) << "x" << (int64_t(1) << bn) << "x"
           << (int64_t(1) << bk);
        return os.str();
    }
    // The class's own dimensions, for validating a loaded entry.
    Problem representative() const {
        return Problem::dense(int64_t(1) << bm, int64_t(1) << bn, int64_t(1) << bk, trans_a, trans_b, 1.0f,
                              beta0 ? 0.0f : 1.0f);
    }
};

ClassKey key_of(int slot, Accuracy a, const Problem& p) {
    return {slot, a, p.trans_a, p.trans_b, p.beta == 0.0f, bucket(p.M), bucket(p.N), bucket(p.K)};
}

// "1024" -> 10 when it is a power of two no larger than 2^62; -1 otherwise.
int parse_power_of_two(const std::string& s) {
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
    const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
    if (v == 0 || (v & (v - 1)) != 0 || v > (1ull << 62)) return -1;
    return __builtin_ctzll(v);
}

bool parse_class(const std::string& text, ClassKey& out) {
    std::vector<std::string> f;
    std::stringstream ss(text);
    for (std::string part; std::getline(ss, part, '|');) f.push_back(part);
    if (f.size() != 5) return false;
    try {
        out.slot = backend_slot(f[0]);
        out.accuracy = parse_accuracy(f[1]);
    } catch (const Error&) {
        return false;
    }
    auto flag = [](char ch) { return ch == 'n' || ch == 't'; };
    if (f[2].size() != 2 || !flag(f[2][0]) || !flag(f[2][1])) return false;
    out.trans_a = f[2][0] == 't', out.trans_b = f[2][1] == 't';
    if (f[3] != "beta0" && f[3] != "beta") return false;
    out.beta0 = f[3] == "beta0";
    std::vector<std::string> d;
    std::stringstream ds(f[4]);
    for (std::string part; std::getline(ds, part, 'x');) d.push_back(part);
    if (d.size() != 3) return false;
    out.bm = parse_power_of_two(d[0]), out.bn = parse_power_of_two(d[1]), out.bk = parse_power_of_two(d[2]);
    return out.bm >= 0 && out.bn >= 0 && out.bk >= 0;
}

// --- the table -----------------------------------------------------------------------

// Each candidate's speed in one tournament, as FLOP/s of its best run ("backend/name"):
// rates rather than times, so that two tournaments on different members of a class
// compare.
using Rates = std::map<std::string, double>;

// A class's choice. A tournament on the caller's operands lasts milliseconds, and a
// disturbance as long (a core taken by the hypervisor or another process) can make the
// better kernel look slower for all of its rounds; a choice it made is therefore
// provisional, and the class's calls carry it only until a second tournament, run once
// the class has done kSecondOpinionWork times that tournament's time in calls, has
// confirmed or replaced it. Disturbances only lengthen runs, so each candidate keeps the
// better of its two rates.
struct Choice {
    ClassKey key;
    const Kernel* kernel = nullptr;
    bool confirmed = true;
    int64_t calls_due = 0;                      // the call that takes the second opinion
    mutable std::atomic<int64_t> calls{0};      // calls recalled since the choice was made
    Rates first;                                // the first tournament's rates
};

struct Table {
    std::shared_mutex mutex;
    std::unordered_map<uint64_t, Choice> chosen;  // ClassKey::bits -> choice
    std::map<std::string, std::string> names;     // the kernels, as text
    std::mutex tuning;                            // one tuning at a time
    std::mutex log_mutex;
    std::deque<std::string> rejections;
    std::deque<TuningRecord> records;
};

Table& table() {
    static Table* t = [] {
        auto* fresh = new Table();  // never destroyed: callers may run during exit
#if defined(__unix__) || defined(__APPLE__)
        // fork() in one thread while another reads or changes the table, or tunes (the
        // tuning mutex is held for a whole tournament), must leave the child a working
        // table. The brief locks are taken around the fork, so that the child copies the
        // map whole; the tuning mutex, which may be held for seconds, is not waited for.
        // In the child (one thread, no tournament in it) all three start unlocked, built
        // anew: a reader-writer lock write-locked before fork() cannot be unlocked there,
        // since glibc knows its writer by a thread id the child no longer has.
        pthread_atfork(
            [] {
                table().mutex.lock();
                table().log_mutex.lock();
            },
            [] {
                table().log_mutex.unlock();
                table().mutex.unlock();
            },
            [] {
                new (&table().mutex) std::shared_mutex();
                new (&table().log_mutex) std::mutex();
                new (&table().tuning) std::mutex();
            });
#endif
        return fresh;
    }();
    return *t;
}

// "backend/name": how tunings, rejections and rates name a candidate (the rates of two
// tournaments meet by it).
std::string qualified_name(const Kernel& k) { return k.info().backend + "/" + k.info().name; }

std::string entry_name(const ClassKey& key, const Kernel& k) {
    return key.slot == 0 ? qualified_name(k) : k.info().name;
}

std::atomic<uint64_t> generation{0};

// Keeps k for the class: confirmed, or provisional when `first` is given.
void remember(const ClassKey& key, const Kernel& k, const ProvisionalChoice* first = nullptr) {
    Table& t = table();
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    generation.fetch_add(1, std::memory_order_release);
    Choice& c = t.chosen[key.bits()];
    c.key = key;
    c.kernel = &k;
    c.confirmed = first == nullptr;
    c.calls_due = first ? first->calls_left : 0;
    c.calls.store(0, std::memory_order_relaxed);
    c.first = first ? first->rates : Rates{};
    t.names[key.text()] = entry_name(key, k);
}

struct Recalled {
    const Kernel* kernel = nullptr;  // null: the class has no choice that accepts p
    bool second_opinion_due = false;  // this call is the one that takes it
};

// The class's kernel for p. Counting a call (the calls of run_selected) brings a
// provisional choice nearer its second opinion; exactly one call is told it is due.
Recalled recall(const ClassKey& key, const Problem& p, bool count_call = false) {
    Table& t = table();
    std::shared_lock<std::shared_mutex> lock(t.mutex);
    auto it = t.chosen.find(key.bits());
    // A member of the class that the kept kernel's constraints refuse is tuned anew.
    if (it == t.chosen.end() || !it->second.kernel->info().accepts(p)) return {};
    const Choice& c = it->second;
    const bool due = count_call && !c.confirmed &&
                     c.calls.fetch_add(1, std::memory_order_relaxed) + 1 == c.calls_due;
    return {c.kernel, due};
}

void reject(const Kernel& k, const std::string& why) {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.log_mutex);
    t.rejections.push_back(qualified_name(k) + ": " + why);
    if (t.rejections.size() > 64) t.rejections.pop_front();
}

// Each surviving candidate's best time, as "backend/name" and seconds.
using Timings = std::vector<std::pair<std::string, double>>;

void record(const ClassKey& key, const Kernel& winner, Timings seconds, bool second_opinion) {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.log_mutex);
    t.records.push_back({key.text(), qualified_name(winner), std::move(seconds), second_opinion});
    if (t.records.size() > 64) t.records.pop_front();
}

// --- candidates ----------------------------------------------------------------------

// Backends whose candidates compete: the one named, or for "auto" every available
// performance target.
std::vector<const Backend*> competing_backends(const std::string& backend) {
    const Registry& reg = Registry::global();
    if (backend != "auto") return {&reg.resolve_backend(backend)};
    std::vector<const Backend*> out;
    for (const Backend* b : reg.backends())
        if (b->auto_priority() > 0 && reg.available(*b)) out.push_back(b);
    if (out.empty()) out.push_back(&reg.best_backend());  // throws when none is available
    return out;
}

struct Candidates {
    std::vector<const Kernel*> kernels;  // accept p; preferred first
};

// A backend whose kernels run on a GPU, which host arrays must travel to.
bool is_gpu_backend(const std::string& name) { return name == "cuda" || name == "metal"; }

Candidates candidates_for(const std::string& backend, const Problem& p, Accuracy a) {
    const Registry& reg = Registry::global();
    const auto backends = competing_backends(backend);
    std::vector<std::vector<const Kernel*>> per_backend;
    for (const Backend* b : backends) {
        std::vector<const Kernel*> marked, others;
        for (const Kernel* k : reg.kernels(b->name())) {
            if (!k->info().accepts(p) || !allows(a, k->info().precision)) continue;
            (k->info().auto_candidate ? marked : others).push_back(k);
        }
        // A backend without marked candidates (the emulator) offers its highest rung.
        if (marked.empty() && !others.empty()) marked.push_back(b->preferred(p, others));
        if (!marked.empty()) {
            const Kernel* first = b->preferred(p, marked);
            std::stable_partition(marked.begin(), marked.end(), [&](const Kernel* k) { return k == first; });
            per_backend.push_back(std::move(marked));
        }
    }
    if (per_backend.empty()) {
        throw ConstraintError("no kernel of backend '" + backend + "' with precision allowed by '" + to_string(a) +
                              "' accepts " + p.describe());
    }
    // The heuristic's backend first: a GPU only for big problems.
    size_t lead = 0;
    const bool big = p.flops() >= 1e10 && std::min({p.M, p.N, p.K}) >= 256;
    for (size_t i = 0; i < per_backend.size(); ++i) {
        if (is_gpu_backend(per_backend[i].front()->info().backend) == big) {
            lead = i;
            break;
        }
    }
    Candidates c;
    c.kernels = per_backend[lead];
    for (size_t i = 0; i < per_backend.size(); ++i)
        if (i != lead) c.kernels.insert(c.kernels.end(), per_backend[i].begin(), per_backend[i].end());
    return c;
}

// --- checking a candidate's C on the caller's operands --------------------------------

// A few elements of C, with a float64 reference and a bound on how far an FP32 sum of
// the same products may land from it (sum of |terms|): computed before any candidate
// writes C, from the operands as they are.
struct Samples {
    struct Point {
        int64_t i, j;
        double ref, magnitude;
    };
    std::vector<Point> points;

    Samples(const Problem& p, const float* A, const float* B, const float* C) {
        const int64_t rows = std::min<int64_t>(p.M, 4), cols = std::min<int64_t>(p.N, 8);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
                const int64_t i = rows == 1 ? 0 : r * (p.M - 1) / (rows - 1);
                const int64_t j = cols == 1 ? 0 : c * (p.N - 1) / (cols - 1);
                double sum = 0.0, mag = 0.0;
                for (int64_t k = 0; k < p.K; ++k) {
                    const double t = double(op_a(p, A, i, k)) * double(op_b(p, B, k, j));
                    sum += t;
                    mag += std::fabs(t);
                }
                double ref = double(p.alpha) * sum, bound = std::fabs(double(p.alpha)) * mag;
                if (p.beta != 0.0f) {
                    const double c0 = double(p.beta) * double(C[i * p.ldc + j]);
                    ref += c0;
                    bound += std::fabs(c0);
                }
                // Where the terms could reach FP32's range, an IEEE FP32 kernel may give
                // +-Inf or NaN (a product or a partial sum overflowing, in an order of its
                // own) while the float64 sum stays finite: no one answer to check against.
                // That includes sums that only alpha brings back into range (1e30 x 1e30
                // terms, alpha = 1e-30): kernels sum op(A) op(B) before they scale it.
                const double fp32_max = double(std::numeric_limits<float>::max());
                if (std::isfinite(ref) && bound < fp32_max && mag < fp32_max) points.push_back({i, j, ref, bound});
            }
    }

    // Worst-case rounding of a K-term FP32 sum is about K units in the last place of the
    // sum of magnitudes; twice that (plus the relaxed inputs of tf32) never fails a
    // correct kernel, while a wrong tile, transpose or missing k block lands far above.
    bool passes(const Problem& p, const float* C, Precision precision) const {
        double rel = 2.0 * double(p.K + 2) * std::ldexp(1.0, -24);
        if (precision == Precision::tf32) rel += std::ldexp(1.0, -8);
        for (const Point& pt : points) {
            const double got = C[pt.i * p.ldc + pt.j];
            if (!(std::fabs(got - pt.ref) <= rel * pt.magnitude + 1e-30)) return false;
        }
        return true;
    }
};

constexpr double kTuningBudget = 0.010;  // seconds of candidate runs per class
constexpr double kLongRun = 0.25;        // a run this long: only the baselines compete
constexpr int kMinRounds = 3;           // interleaved rounds at least (unless a run is long)
constexpr int kMaxRounds = 5;
constexpr double kMargin = 0.03;        // the preferred candidate's and the baselines' advantage in a tie
constexpr double kRetimeBelow = 1e-3;  // seconds: shorter calls are timed again, warm,
constexpr double kWarmBlock = 2e-4;    // in a block of two calls or about this long
constexpr double kLoopTimed = 200e-6;  // seconds: shorter synthetic runs are timed as a loop
constexpr double kLoopSeconds = 1e-3;  // of about this long
// Host time of the Python device-array entry itself (fastgemm.sgemm on torch tensors,
// before the native launch): 2-5 us a call on the H200 machines (docs/cuda-notes.md).
constexpr double kEntryCost = 5e-6;
// A provisional choice's second opinion comes once the class's calls have done this many
// times the first tournament's time in work (by the winner's time a call): the second
// tournament then costs at most a tenth of what the class has run.
constexpr double kSecondOpinionWork = 10.0;

// Seconds that k's library spins after running p (KernelInfo::spins_after).
double spin_after(const Kernel& k, const Problem& p) {
    return k.info().spins_after ? k.info().spins_after(p) : 0.0;
}

// Waits out another library's spinning threads (`seconds` after its last call).
void settle_host(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

// Times each candidate running `call(k)` (which returns seconds, or throws) in
// interleaved rounds, checks it with `check(k)` after its first run, and returns the
// fastest that passed; `seconds` gets each passing candidate's best time. When the
// first candidate's run is long, only the vendor baselines run against it.
// Candidates whose library's threads spin after running the timed problem
// (KernelInfo::spins_after) run first, in rounds of their own; the others' rounds start
// only once that spinning is over, so that no candidate is timed against another
// library's threads still busy on the cores.
// With `prior` (a second opinion), each candidate counts at the better of its rate there
// and its time here.
template <class Call, class Check>
const Kernel& tournament(std::vector<const Kernel*> cands, const Problem& timed, Call&& call, Check&& check,
                         Timings& seconds, const Rates& prior = {}) {
    std::vector<double> best(cands.size(), std::numeric_limits<double>::infinity());
    std::vector<bool> ok(cands.size(), true);
    std::string errors;
    auto refuse = [&](size_t i, const std::string& why) {
        ok[i] = false;
        reject(*cands[i], why);
        errors += (errors.empty() ? "" : "; ") + cands[i]->info().name + ": " + why;
    };
    std::vector<size_t> order(cands.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto spins = [&](size_t i) { return spin_after(*cands[i], timed) > 0.0; };
    const size_t spinning = size_t(std::stable_partition(order.begin(), order.end(), spins) - order.begin());
    bool one_round = false;  // a long run: the round in progress is the only one
    auto rounds = [&](size_t begin, size_t end) {
        double spent = 0.0;
        for (int round = 0; round < kMaxRounds && !(round > 0 && one_round) &&
                            (round < kMinRounds || spent < kTuningBudget);
             ++round) {
            for (size_t o = begin; o < end; ++o) {
                const size_t i = order[o];
                if (!ok[i]) continue;
                double t = 0.0;
                try {
                    t = call(*cands[i]);
                } catch (const Interrupted&) {
                    throw;
                } catch (const std::exception& e) {
                    refuse(i, e.what());
                    continue;
                }
                if (round == 0 && !check(*cands[i])) {
                    refuse(i, "result failed the check against a float64 reference");
                    continue;
                }
                best[i] = std::min(best[i], t);
                spent += t;
                if (round == 0 && t > kLongRun && (i == 0 || spins(i))) {
                    one_round = true;
                    // The first candidate long: the rest would be too; only the baselines
                    // are worth the time.
                    if (i == 0)
                        for (size_t j = 1; j < cands.size(); ++j) ok[j] = ok[j] && cands[j]->info().baseline;
                }
            }
        }
    };
    rounds(0, spinning);
    if (spinning > 0 && spinning < cands.size()) {
        double longest = 0.0;
        for (size_t o = 0; o < spinning; ++o) longest = std::max(longest, spin_after(*cands[order[o]], timed));
        settle_host(longest);
        one_round = false;  // the spinning candidates' long runs say nothing of the others'
    }
    rounds(spinning, cands.size());
    // The fastest; the preferred candidate (first) and the vendor baselines keep the
    // class unless another beats them by more than kMargin, a difference that one noisy
    // round cannot fake: auto is then never slower than the vendor call it replaces by a
    // timing accident (a GEMV that cuBLAS runs at 82% of the copy bandwidth and a
    // tensor-core tile at 77% time within a few percent of each other).
    const Kernel* win = nullptr;
    double win_time = 0.0;
    seconds.clear();
    for (size_t i = 0; i < cands.size(); ++i) {
        if (!ok[i] || !(best[i] < std::numeric_limits<double>::infinity())) continue;
        const std::string name = qualified_name(*cands[i]);
        seconds.emplace_back(name, best[i]);
        double own = best[i];
        const auto earlier = prior.find(name);
        if (earlier != prior.end() && earlier->second > 0.0) own = std::min(own, timed.flops() / earlier->second);
        const bool incumbent = i == 0 || cands[i]->info().baseline;
        const double t = incumbent ? own / (1.0 + kMargin) : own;
        if (!win || t < win_time) win = cands[i], win_time = t;
    }
    if (!win) throw KernelError("every kernel=\"auto\" candidate failed: " + errors);
    return *win;
}

// Tunes on the caller's operands; C ends up holding the winner's result.
const Kernel& tune_on_operands(std::vector<const Kernel*> cands, const Problem& p, const float* A,
                               const float* B, float* C, Timings& seconds, const Rates& prior = {}) {
    const Samples samples(p, A, B, C);
    std::vector<float> saved;  // beta != 0: every run starts from the caller's C
    if (p.beta != 0.0f) {
        saved.resize(size_t(p.M) * size_t(p.N));
        for (int64_t i = 0; i < p.M; ++i) std::memcpy(&saved[size_t(i * p.N)], C + i * p.ldc, size_t(p.N) * 4);
    }
    const Kernel* last = nullptr;
    std::vector<const Kernel*> seen;
    auto restore = [&] {
        for (int64_t i = 0; i < p.M; ++i) std::memcpy(C + i * p.ldc, &saved[size_t(i * p.N)], size_t(p.N) * 4);
    };
    using Clock = std::chrono::steady_clock;
    auto since = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    auto call = [&](const Kernel& k) {
        if (!saved.empty()) {
            restore();
        } else if (std::find(seen.begin(), seen.end(), &k) == seen.end()) {
            // A candidate's first run starts from a poisoned C, so one that leaves C
            // unwritten cannot pass on the previous candidate's result.
            for (int64_t i = 0; i < p.M; ++i)
                std::fill(C + i * p.ldc, C + i * p.ldc + p.N, std::numeric_limits<float>::quiet_NaN());
        }
        seen.push_back(&k);
        last = nullptr;
        const auto t0 = Clock::now();
        k.run_once(p, A, B, C);
        double t = since(t0);
        if (t < kRetimeBelow) {
            // A call shorter than a millisecond is timed again as a block of back-to-back
            // calls (two, or about kWarmBlock of short ones), the way a loop of the
            // caller's calls runs it: a single call would measure the state the previous
            // candidate left, its own workers asleep (25-50 us to wake) and the previous
            // one's pool still spinning (fastgemm's, for 200 us; OpenBLAS's longer spin is
            // kept out of the others' rounds by the tournament).
            const int reps = int(std::clamp(kWarmBlock / std::max(t, 1e-8), 2.0, 1000.0));
            const auto b0 = Clock::now();
            for (int r = 0; r < reps; ++r) {
                if (!saved.empty()) restore();
                k.run_once(p, A, B, C);
            }
            t = since(b0) / reps;
        }
        last = &k;
        return t;
    };
    auto check = [&](const Kernel& k) { return samples.passes(p, C, k.info().precision); };
    const Kernel& winner = tournament(cands, p, call, check, seconds, prior);
    if (last != &winner) call(winner);  // C holds the winner's result, as later calls will
    return winner;
}

// Tunes on a Bench of random operands with the problem's dimensions.
const Kernel& tune_synthetic(std::vector<const Kernel*> cands, const Problem& p, bool one_backend,
                             Timings& seconds) {
    Problem dense = Problem::dense(p.M, p.N, p.K, p.trans_a, p.trans_b, p.alpha, p.beta);
    Bench bench(dense, 0x7a11);
    if (!one_backend) {
        std::vector<float> C = bench.C_initial();
        return tune_on_operands(cands, dense, bench.A().data(), bench.B().data(), C.data(), seconds);
    }
    BenchOptions opts;
    opts.warmup = 1;
    opts.iters = 3;
    opts.max_seconds = kLongRun;
    std::vector<const Kernel*> verified;
    bool passed = true;
    auto call = [&](const Kernel& k) {
        opts.verify = std::find(verified.begin(), verified.end(), &k) == verified.end();
        BenchResult r = bench.run(k, opts);
        if (opts.verify) verified.push_back(&k), passed = r.verification.passed;
        // What a loop of the caller's calls costs: on a GPU a small problem is bound by
        // the launch, not the kernel (cuBLAS's launch alone outlasts a 256^3 product),
        // and a launch of several kernels idles the GPU between them; a short call is
        // therefore timed as a loop of back-to-back calls.
        // A loop in Python also pays the entry's own cost on every call, on top of an
        // asynchronous launch: a host-bound candidate loses it all, a device-bound one
        // hides it behind the device's work.
        const double one = r.call_min();
        if (!(one < kLoopTimed)) return one;
        std::vector<float> C = bench.C_initial();
        auto launch = k.bind(dense, bench.A().data(), bench.B().data(), C.data());
        const int calls = int(std::clamp(kLoopSeconds / std::max(one, 1e-7), 4.0, 200.0));
        const RepeatTiming loop = launch->run_repeated(calls);
        return loop.queue_s > 0.0 ? std::max(loop.call_s, loop.queue_s + kEntryCost) : loop.call_s;  // 0: on the host
    };
    return tournament(cands, dense, call, [&](const Kernel&) { return passed; }, seconds);
}

bool quick_return(const Problem& p) { return p.M == 0 || p.N == 0 || p.K == 0 || p.alpha == 0.0f; }

// Host arrays and GPU kernels: every GPU kernel's call moves the same operands across
// the bus, so timing each of them end to end measures the transfers' noise more than
// the kernels (at 2048 x 4096 x 4096 on the H200 machine the calls of 14 GPU kernels
// spread over 4.7-8.6 ms, and the tournament took an FFMA tile three times slower on
// the device than fp32x3). Each GPU backend offers one candidate instead, at the place
// of its first: the kernel its own policy picks for the problem by device time
// (select_kernel, the device arrays' choice), which then races the host's kernels end
// to end. A GPU backend whose own tuning fails offers none.
std::vector<const Kernel*> one_per_gpu_backend(const std::vector<const Kernel*>& kernels, const Problem& p,
                                               Accuracy accuracy) {
    std::vector<const Kernel*> out;
    std::vector<std::string> seen;
    for (const Kernel* k : kernels) {
        const std::string& backend = k->info().backend;
        if (!is_gpu_backend(backend)) {
            out.push_back(k);
            continue;
        }
        if (std::find(seen.begin(), seen.end(), backend) != seen.end()) continue;
        seen.push_back(backend);
        try {
            out.push_back(&select_kernel(backend, p, accuracy));
        } catch (const Interrupted&) {
            throw;
        } catch (const Error& e) {
            reject(*k, std::string("no ") + backend + " kernel for host arrays: " + e.what());
        }
    }
    return out;
}

// The first tournament's verdict as a provisional choice: each candidate's rate, and the
// calls after which the class takes its second opinion (kSecondOpinionWork times the
// tournament's time, `spent`, by the winner's time a call).
ProvisionalChoice first_opinion(const Kernel& winner, const Timings& seconds, const Problem& p, double spent) {
    ProvisionalChoice first;
    double winner_s = 0.0;
    const std::string name = qualified_name(winner);
    for (const auto& [candidate, s] : seconds) {
        const double rate = p.flops() / s;
        if (std::isfinite(rate) && rate > 0.0) first.rates[candidate] = rate;  // what a loader accepts
        if (candidate == name) winner_s = s;
    }
    const double calls = winner_s > 0.0 ? std::ceil(kSecondOpinionWork * spent / winner_s) : 1.0;
    first.calls_left = int64_t(std::clamp(calls, 1.0, 1e18));
    return first;
}

// A provisional choice whose due tournament did not finish: its count starts again.
void rearm(const ClassKey& key) {
    Table& t = table();
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    auto it = t.chosen.find(key.bits());
    if (it != t.chosen.end() && !it->second.confirmed) it->second.calls.store(0, std::memory_order_relaxed);
}

// The first tournament's rates of a class whose choice is still provisional; false when
// it has none (cleared, or confirmed by another thread meanwhile).
bool provisional_rates(const ClassKey& key, Rates& out) {
    Table& t = table();
    std::shared_lock<std::shared_mutex> lock(t.mutex);
    auto it = t.chosen.find(key.bits());
    if (it == t.chosen.end() || it->second.confirmed) return false;
    out = it->second.first;
    return true;
}

}  // namespace

bool autotune_enabled() {
    static const bool enabled = env_flag("FASTGEMM_AUTOTUNE", true);
    return enabled;
}

std::string shape_class(const std::string& backend, const Problem& p, Accuracy accuracy) {
    const std::string name = backend.empty() ? "auto" : backend;
    return key_of(backend_slot(name), accuracy, p).text();
}

const Kernel& run_selected(const std::string& backend_name, const Problem& p, Accuracy accuracy, const float* A,
                           const float* B, float* C) {
    const std::string backend = backend_name.empty() ? "auto" : backend_name;
    const ClassKey key = key_of(backend_slot(backend), accuracy, p);
    const Recalled kept = recall(key, p, !quick_return(p));
    const bool due = kept.second_opinion_due && autotune_enabled();
    if (kept.kernel && !due) {
        kept.kernel->run_once(p, A, B, C);
        return *kept.kernel;
    }
    Candidates c = candidates_for(backend, p, accuracy);
    if (due && c.kernels.size() == 1) {  // nothing on this member to compare the choice with: it stands
        remember(key, *kept.kernel);
        kept.kernel->run_once(p, A, B, C);
        return *kept.kernel;
    }
    if (quick_return(p) || c.kernels.size() == 1 || !autotune_enabled()) {
        const Kernel& k = *c.kernels.front();
        k.run_once(p, A, B, C);
        // Kept only when a loaded table could hold it too: an auto candidate (a backend
        // without candidates, the emulator, falls back to its highest rung every time).
        // A rule's pick among several candidates was never timed: it is kept unconfirmed
        // with nothing measured, so that a process that times (a saved table) measures
        // it at its first call, as a first opinion.
        if (!quick_return(p) && k.info().auto_candidate) {
            const ProvisionalChoice untimed{1, {}};
            remember(key, k, c.kernels.size() > 1 ? &untimed : nullptr);
        }
        return k;
    }
    p.validate();
    // Before the tuning lock, which select_kernel takes for itself.
    if (backend == "auto") c.kernels = one_per_gpu_backend(c.kernels, p, accuracy);
    if (c.kernels.empty()) throw KernelError("no kernel=\"auto\" candidate for " + p.describe() + " could be tuned");
    std::lock_guard<std::mutex> tuning(table().tuning);
    if (!due) {
        if (const Kernel* k = recall(key, p).kernel) {  // tuned by another thread meanwhile
            k->run_once(p, A, B, C);
            return *k;
        }
    }
    // A due choice with first-tournament rates takes its second opinion; one without
    // (an untimed pick) its first.
    Rates prior;
    const bool second = due && provisional_rates(key, prior) && !prior.empty();
    Timings seconds;
    const auto t0 = std::chrono::steady_clock::now();
    const Kernel* timed = nullptr;
    try {
        timed = &tune_on_operands(c.kernels, p, A, B, C, seconds, prior);
    } catch (...) {
        if (due) rearm(key);  // interrupted or failed: due again after as many calls
        throw;
    }
    const Kernel& winner = *timed;
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (second) {
        remember(key, winner);
    } else {
        const ProvisionalChoice first = first_opinion(winner, seconds, p, spent);
        remember(key, winner, &first);
    }
    record(key, winner, std::move(seconds), second);
    return winner;
}

const Kernel& select_kernel(const std::string& backend_name, const Problem& p, Accuracy accuracy) {
    const std::string backend = backend_name.empty() ? "auto" : backend_name;
    const ClassKey key = key_of(backend_slot(backend), accuracy, p);
    if (const Kernel* k = recall(key, p).kernel) return *k;
    Candidates c = candidates_for(backend, p, accuracy);
    if (quick_return(p) || c.kernels.size() == 1 || !autotune_enabled()) return *c.kernels.front();
    p.validate();
    std::lock_guard<std::mutex> tuning(table().tuning);
    if (const Kernel* k = recall(key, p).kernel) return *k;
    Timings seconds;
    const Kernel& winner = tune_synthetic(c.kernels, p, backend != "auto", seconds);
    remember(key, winner);  // tuned on loops of calls by device time: confirmed as it is
    record(key, winner, std::move(seconds), false);
    return winner;
}

std::map<std::string, std::string> tuning_table() {
    Table& t = table();
    std::shared_lock<std::shared_mutex> lock(t.mutex);
    return t.names;
}

int load_tuning_table(const std::map<std::string, std::string>& entries,
                      const std::map<std::string, ProvisionalChoice>& provisional) {
    const Registry& reg = Registry::global();
    int discarded = 0;
    for (const auto& [text, value] : entries) {
        ClassKey key;
        const Kernel* k = nullptr;
        if (parse_class(text, key)) {
            std::string backend = key.backend(), name = value;
            if (key.slot == 0) {  // "backend/kernel"
                const size_t slash = value.find('/');
                backend = slash == std::string::npos ? "" : value.substr(0, slash);
                name = slash == std::string::npos ? "" : value.substr(slash + 1);
            }
            try {
                k = reg.available(reg.backend(backend)) ? reg.find(backend, name) : nullptr;
            } catch (const Error&) {
                k = nullptr;  // unknown backend
            }
            const Problem rep = key.representative();
            if (k && !(k->info().auto_candidate && allows(key.accuracy, k->info().precision) && k->info().accepts(rep)))
                k = nullptr;
        }
        if (!k) {
            ++discarded;
            continue;
        }
        const auto pending = provisional.find(text);
        if (pending == provisional.end()) {
            remember(key, *k);
            continue;
        }
        // Still awaiting its second opinion: a count of calls left and the first
        // tournament's rates, which must be usable as such.
        const ProvisionalChoice& first = pending->second;
        bool usable = first.calls_left >= 1;
        for (const auto& [candidate, rate] : first.rates) usable = usable && std::isfinite(rate) && rate > 0.0;
        if (!usable) {
            ++discarded;  // the class is tuned again
            continue;
        }
        remember(key, *k, &first);
    }
    // A provisional record without its class's entry says nothing.
    for (const auto& [text, pending] : provisional) discarded += entries.count(text) ? 0 : 1;
    return discarded;
}

std::map<std::string, ProvisionalChoice> provisional_choices() {
    Table& t = table();
    std::shared_lock<std::shared_mutex> lock(t.mutex);
    std::map<std::string, ProvisionalChoice> out;
    for (const auto& [bits, c] : t.chosen) {
        if (c.confirmed) continue;
        ProvisionalChoice& p = out[c.key.text()];
        p.calls_left = std::max<int64_t>(1, c.calls_due - c.calls.load(std::memory_order_relaxed));
        p.rates = c.first;
    }
    return out;
}

void clear_tuning_table() {
    Table& t = table();
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    t.chosen.clear();
    t.names.clear();
    generation.fetch_add(1, std::memory_order_release);
}

uint64_t tuning_generation() { return generation.load(std::memory_order_acquire); }

std::vector<std::string> tuning_rejections() {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.log_mutex);
    return {t.rejections.begin(), t.rejections.end()};
}

std::vector<TuningRecord> tuning_records() {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.log_mutex);
    return {t.records.begin(), t.records.end()};
}

}  // namespace fastgemm
