#include "registry.hpp"

#include <algorithm>
#include <sstream>

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

std::string did_you_mean(const std::string& wanted, const std::vector<std::string>& names) {
    std::ostringstream os;
    os << "; available: ";
    for (size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << names[i];
    return os.str();
}

}  // namespace

Registry& Registry::global() {
    // Built on first use, after every translation unit is initialised.
    static Registry* registry = [] {
        auto* r = new Registry();
        register_all(*r);
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
    throw NotFoundError("unknown backend '" + name + "'" + did_you_mean(name, names) + ", auto");
}

const Backend& Registry::best_backend() const {
    const Backend* best = nullptr;
    for (const auto& b : backends_) {
        if (b->status().available && (!best || b->auto_priority() > best->auto_priority())) {
            best = b.get();
        }
    }
    if (!best) throw BackendUnavailableError("no backend is available on this machine");
    return *best;
}

const Backend& Registry::resolve_backend(const std::string& name) const {
    if (name.empty() || name == "auto") return best_backend();
    const Backend& b = backend(name);
    BackendStatus s = b.status();
    if (!s.available) {
        throw BackendUnavailableError("backend '" + name + "' is unavailable: " + s.reason);
    }
    return b;
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
