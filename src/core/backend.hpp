// Backend: a place kernels run (cpu, metal, metal-emu, cuda). It says whether it can
// run on this machine, and why not, before any kernel of it is asked for.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fastgemm {

struct BackendStatus {
    std::string name;
    bool available = false;
    std::string reason;  // why not, when unavailable
    std::string device;  // "AMD EPYC (2 cores, avx2+fma)", "NVIDIA H200", ...
    std::vector<std::pair<std::string, std::string>> properties;  // for `fastgemm info`
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    virtual BackendStatus status() const = 0;
    // Preference when the caller says backend="auto": higher wins among available ones.
    virtual int auto_priority() const = 0;
};

}  // namespace fastgemm
