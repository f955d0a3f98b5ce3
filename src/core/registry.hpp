// Registry: every backend and kernel fastgemm has, keyed by (backend, name).
//
// Backends register themselves through one function each (register_cpu_backend, ...)
// called from registry.cpp, so a static library keeps its kernels and registration
// order does not depend on static initialisation.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend.hpp"
#include "kernel.hpp"

namespace fastgemm {

class Registry {
public:
    static Registry& global();

    void add_backend(std::unique_ptr<Backend> backend);
    void add_kernel(std::unique_ptr<Kernel> kernel);  // its info().backend must exist

    std::vector<const Backend*> backends() const;
    const Backend& backend(const std::string& name) const;  // NotFoundError
    // Whether a backend can run here (its status, asked once per process and kept).
    bool available(const Backend& b) const;
    // Available backend of highest auto_priority.
    const Backend& best_backend() const;
    // "auto" -> best_backend(); otherwise the named one, which must be available.
    const Backend& resolve_backend(const std::string& name) const;
    // A kernel by name on a backend, or with backend "auto" on the available backend
    // of highest auto_priority that has a kernel of that name: the one rule every entry
    // point (sgemm, benchmark, the CLI) uses. NotFoundError with suggestions otherwise.
    const Kernel& resolve_kernel(const std::string& backend, const std::string& name) const;

    std::vector<const Kernel*> kernels(const std::string& backend = "") const;  // ladder order
    const Kernel& kernel(const std::string& backend, const std::string& name) const;  // NotFoundError
    const Kernel* find(const std::string& backend, const std::string& name) const;

private:
    Registry() = default;
    std::vector<std::unique_ptr<Backend>> backends_;
    std::vector<std::unique_ptr<Kernel>> kernels_;
    std::map<std::pair<std::string, std::string>, const Kernel*> by_key_;
    mutable std::mutex available_mutex_;
    mutable std::map<const Backend*, bool> available_;
};

}  // namespace fastgemm
