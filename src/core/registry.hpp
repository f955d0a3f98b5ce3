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
    // Available backend of highest auto_priority.
    const Backend& best_backend() const;
    // "auto" -> best_backend(); otherwise the named one, which must be available.
    const Backend& resolve_backend(const std::string& name) const;

    std::vector<const Kernel*> kernels(const std::string& backend = "") const;  // ladder order
    const Kernel& kernel(const std::string& backend, const std::string& name) const;  // NotFoundError
    const Kernel* find(const std::string& backend, const std::string& name) const;

private:
    Registry() = default;
    std::vector<std::unique_ptr<Backend>> backends_;
    std::vector<std::unique_ptr<Kernel>> kernels_;
    std::map<std::pair<std::string, std::string>, const Kernel*> by_key_;
};

}  // namespace fastgemm
