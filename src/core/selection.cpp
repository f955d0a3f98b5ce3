#include "selection.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <sstream>

#include "errors.hpp"
#include "registry.hpp"
#include "runner.hpp"

namespace fastgemm {

namespace {

constexpr int64_t kProxyCap = 1024;

int64_t shape_bucket(int64_t d) {
    int64_t b = 1;
    while (b < d && b < kProxyCap) b <<= 1;
    return std::min(b, kProxyCap);
}

std::mutex& table_mutex() {
    static std::mutex m;
    return m;
}
std::map<std::string, std::string>& table() {
    static std::map<std::string, std::string> t;
    return t;
}

bool autotune_enabled() {
    const char* env = std::getenv("FASTGEMM_AUTOTUNE");
    return !(env && (std::string(env) == "0" || std::string(env) == "off"));
}

const Kernel* fastest(const std::vector<const Kernel*>& candidates, const Problem& p) {
    Problem proxy = Problem::dense(shape_bucket(p.M), shape_bucket(p.N), shape_bucket(p.K),
                                   p.trans_a, p.trans_b, p.alpha, p.beta);
    Bench bench(proxy, 0x7a11);
    BenchOptions opts;
    opts.warmup = 1;
    opts.iters = 3;
    opts.verify = false;
    const Kernel* best = nullptr;
    double best_time = std::numeric_limits<double>::infinity();
    for (const Kernel* k : candidates) {
        if (!k->info().accepts(proxy)) continue;
        double t = bench.run(*k, opts).device_median();
        if (t < best_time) best_time = t, best = k;
    }
    return best ? best : candidates.front();
}

}  // namespace

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
        case Accuracy::fp32: return p == Precision::fp32 || p == Precision::fp32x3;
        case Accuracy::tf32: return true;
    }
    return false;
}

std::string shape_class(const std::string& backend, const Problem& p, Accuracy accuracy) {
    std::ostringstream os;
    os << backend << "|" << to_string(accuracy) << "|" << (p.trans_a ? 't' : 'n') << (p.trans_b ? 't' : 'n') << "|"
       << (p.beta == 0.0f ? "beta0" : "beta") << "|" << shape_bucket(p.M) << "x"
       << shape_bucket(p.N) << "x" << shape_bucket(p.K);
    return os.str();
}

const Kernel& select_kernel(const std::string& backend_name, const Problem& p, Accuracy accuracy) {
    const Registry& reg = Registry::global();
    const std::string backend = reg.resolve_backend(backend_name).name();
    std::vector<const Kernel*> candidates, fallback;
    for (const Kernel* k : reg.kernels(backend)) {
        if (!k->info().accepts(p) || !allows(accuracy, k->info().precision)) continue;
        (k->info().auto_candidate ? candidates : fallback).push_back(k);
    }
    if (candidates.empty()) {
        // A backend without marked candidates (the emulator): its highest rung that fits.
        if (fallback.empty()) {
            throw ConstraintError("no kernel of backend '" + backend + "' accepts " + p.describe());
        }
        return **std::max_element(fallback.begin(), fallback.end(), [](const Kernel* a, const Kernel* b) {
            return a->info().ladder_step < b->info().ladder_step;
        });
    }
    // Highest rung first: that is the choice when timing is off or ties.
    std::stable_sort(candidates.begin(), candidates.end(), [](const Kernel* a, const Kernel* b) {
        return a->info().ladder_step > b->info().ladder_step;
    });
    if (candidates.size() == 1 || !autotune_enabled()) return *candidates.front();

    std::string key = shape_class(backend, p, accuracy);
    std::lock_guard<std::mutex> lock(table_mutex());
    auto it = table().find(key);
    if (it != table().end()) {
        if (const Kernel* k = reg.find(backend, it->second)) {
            if (k->info().accepts(p)) return *k;
        }
    }
    const Kernel* best = fastest(candidates, p);
    table()[key] = best->info().name;
    return *best;
}

std::map<std::string, std::string> tuning_table() {
    std::lock_guard<std::mutex> lock(table_mutex());
    return table();
}

int load_tuning_table(const std::map<std::string, std::string>& t) {
    std::lock_guard<std::mutex> lock(table_mutex());
    for (const auto& kv : t) table()[kv.first] = kv.second;
    return 0;
}

}  // namespace fastgemm
