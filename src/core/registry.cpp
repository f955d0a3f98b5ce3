#include "registry.hpp"

#include <algorithm>
#include <new>
#include <sstream>
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

#include "backends.hpp"
#include "errors.hpp"

namespace fastgemm {

namespace {

// A backend this build does not contain: listed, so users learn why it is missing.
class UnbuiltBackend : public Backend {
public:
    UnbuiltBackend(std::string name, std::string reason)
        : name_(std::move(name)), reason_(std::move(reason)) {}
    std::string name() const override { return name_; }
    BackendStatus status() const override { return {name_, false, reason_, "", {}}; }
    int auto_priority() const override { return -1; }

private:
    std::string name_, reason_;
};

void register_all(Registry& r) {
    register_cpu_backend(r);
#if defined(FASTGEMM_WITH_METAL)
    register_metal_backend(r);
#else
    r.add_backend(std::make_unique<UnbuiltBackend>(
        "metal", "not built: the metal backend needs macOS with the Metal framework (this build is for "
#if defined(__APPLE__)
                 "macOS without FASTGEMM_WITH_METAL"
#else
                 "a non-Apple platform"
#endif
                 ")"));
#endif
#if defined(FASTGEMM_WITH_EMU)
    register_metal_emu_backend(r);
#else
    r.add_backend(std::make_unique<UnbuiltBackend>(
        "metal-emu", "not built: configure with -DFASTGEMM_EMU=ON"));
#endif
#if defined(FASTGEMM_WITH_CUDA)
    register_cuda_backend(r);
#else
    r.add_backend(std::make_unique<UnbuiltBackend>(
        "cuda", "not built: no CUDA toolkit (nvcc) was found when fastgemm was compiled, or "
                "FASTGEMM_CUDA=OFF"));
#endif
}

// Edit distance (insertions, deletions, substitutions), for suggestions.
size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

// "; did you mean 'packed'? available: ..." : the names within a few edits of `wanted`
// (or starting with it) first, then every name.
std::string did_you_mean(const std::string& wanted, const std::vector<std::string>& names) {
    std::vector<std::string> close;
    const size_t limit = std::max<size_t>(2, wanted.size() / 3);
    for (const auto& n : names)
        if (edit_distance(wanted, n) <= limit || (!wanted.empty() && n.rfind(wanted, 0) == 0)) close.push_back(n);
    std::ostringstream os;
    if (!close.empty()) {
        os << "; did you mean ";
        for (size_t i = 0; i < close.size() && i < 3; ++i) os << (i ? " or " : "") << "'" << close[i] << "'";
        os << "?";
    }
    os << " available: ";
    for (size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << names[i];
    return os.str();
}

}  // namespace

Registry& Registry::global() {
    // Built on first use, after every translation unit is initialised.
    static Registry* registry = [] {
        auto* r = new Registry();
        register_all(*r);
#if defined(__unix__) || defined(__APPLE__)
        // A fork while another thread held available_mutex_ would leave the child's copy
        // locked forever; the child has one thread, so it starts from an unlocked one.
        pthread_atfork(nullptr, nullptr, [] { new (&Registry::global().available_mutex_) std::mutex(); });
#endif
        return r;
    }();
    return *registry;
}

void Registry::add_backend(std::unique_ptr<Backend> backend) {
    backends_.push_back(std::move(backend));
}

void Registry::add_kernel(std::unique_ptr<Kernel> kernel) {
    const auto& info = kernel->info();
    backend(info.backend);  // must exist
    auto key = std::make_pair(info.backend, info.name);
    if (by_key_.count(key)) {
        throw Error("kernel '" + info.name + "' registered twice for backend " + info.backend);
    }
    by_key_[key] = kernel.get();
    kernels_.push_back(std::move(kernel));
}

std::vector<const Backend*> Registry::backends() const {
    std::vector<const Backend*> out;
    for (const auto& b : backends_) out.push_back(b.get());
    return out;
}

const Backend& Registry::backend(const std::string& name) const {
    for (const auto& b : backends_) {
        if (b->name() == name) return *b;
    }
    std::vector<std::string> names;
    for (const auto& b : backends_) names.push_back(b->name());
    names.push_back("auto");
    throw NotFoundError("unknown backend '" + name + "'" + did_you_mean(name, names));
}

bool Registry::available(const Backend& b) const {
    std::lock_guard<std::mutex> lock(available_mutex_);
    auto it = available_.find(&b);
    if (it == available_.end()) it = available_.emplace(&b, b.status().available).first;
    return it->second;
}

const Backend& Registry::best_backend() const {
    const Backend* best = nullptr;
    for (const auto& b : backends_) {
        if (available(*b) && (!best || b->auto_priority() > best->auto_priority())) {
            best = b.get();
        }
    }
    if (!best) throw BackendUnavailableError("no backend is available on this machine");
    return *best;
}

const Backend& Registry::resolve_backend(const std::string& name) const {
    if (name.empty() || name == "auto") return best_backend();
    const Backend& b = backend(name);
    if (!available(b)) {
        throw BackendUnavailableError("backend '" + name + "' is unavailable: " + b.status().reason);
    }
    return b;
}

const Kernel& Registry::resolve_kernel(const std::string& backend_name, const std::string& name) const {
    if (!backend_name.empty() && backend_name != "auto") return kernel(resolve_backend(backend_name).name(), name);
    const Kernel* found = nullptr;
    const Backend* owner = nullptr;
    for (const auto& b : backends_) {
        if (!available(*b) || (owner && b->auto_priority() <= owner->auto_priority())) continue;
        if (const Kernel* k = find(b->name(), name)) found = k, owner = b.get();
    }
    if (found) return *found;
    std::vector<std::string> names;
    for (const auto& b : backends_)
        if (available(*b))
            for (const Kernel* k : kernels(b->name())) names.push_back(k->info().name);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    throw NotFoundError("unknown kernel '" + name + "' (no available backend has a kernel of that name)" +
                        did_you_mean(name, names));
}

std::vector<const Kernel*> Registry::kernels(const std::string& backend_name) const {
    std::vector<const Kernel*> out;
    for (const auto& k : kernels_) {
        if (backend_name.empty() || k->info().backend == backend_name) out.push_back(k.get());
    }
    // Baselines first, then the ladder in order; registration order breaks ties.
    std::stable_sort(out.begin(), out.end(), [](const Kernel* a, const Kernel* b) {
        if (a->info().backend != b->info().backend) return false;
        if (a->info().baseline != b->info().baseline) return a->info().baseline;
        return a->info().ladder_step < b->info().ladder_step;
    });
    return out;
}

const Kernel* Registry::find(const std::string& backend_name, const std::string& name) const {
    auto it = by_key_.find({backend_name, name});
    return it == by_key_.end() ? nullptr : it->second;
}

const Kernel& Registry::kernel(const std::string& backend_name, const std::string& name) const {
    backend(backend_name);  // unknown backend -> its own message
    if (const Kernel* k = find(backend_name, name)) return *k;
    std::vector<std::string> names;
    for (const Kernel* k : kernels(backend_name)) names.push_back(k->info().name);
    throw NotFoundError("unknown kernel '" + name + "' for backend '" + backend_name + "'" +
                        did_you_mean(name, names));
}

}  // namespace fastgemm
