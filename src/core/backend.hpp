// Backend: a place kernels run (cpu, metal, metal-emu, cuda). It says whether it can
// run on this machine, and why not, before any kernel of it is asked for.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernel.hpp"

namespace fastgemm {

struct BackendStatus {
    std::string name;
    bool available = false;
    std::string reason;  // why not, when unavailable
    std::string device;  // "AMD EPYC (2 cores, avx2+fma)", "NVIDIA H200", ...
    std::vector<std::pair<std::string, std::string>> properties;  // for `fastgemm info`
};

// The two roofs of the roofline model, measured on this machine by probes (never
// datasheet numbers): FP32 compute and memory bandwidth. 0 means "not measured".
struct Ceilings {
    double peak_gflops = 0.0;
    double bandwidth_gbs = 0.0;
    std::string peak_probe;       // how the peak was measured ("register-only FMA chains, avx512, 2 threads")
    std::string bandwidth_probe;  // how the bandwidth was measured ("copy of 2 x 256 MiB, read+write bytes")
    // Matrix units that rungs of other precision classes run on, each with its measured
    // rate in G operations/s ("int8 tensor cores (wgmma s8)": the fp32_ozaki rung's roof).
    std::vector<std::pair<std::string, double>> matrix_peaks_gops;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    virtual BackendStatus status() const = 0;
    // Preference when the caller says backend="auto": higher wins among available ones.
    virtual int auto_priority() const = 0;
    // Runs the backend's probes (about a second); backends without probes return zeros.
    virtual Ceilings measure_ceilings() const { return {}; }
    // The candidate kernel="auto" takes for `p` when timing is off (FASTGEMM_AUTOTUNE=0),
    // from the backend's documented rules; `candidates` (not empty) all accept `p`. The
    // default takes the highest ladder step.
    virtual const Kernel* preferred(const Problem& p, const std::vector<const Kernel*>& candidates) const {
        (void)p;
        const Kernel* best = candidates.front();
        for (const Kernel* k : candidates)
            if (k->info().ladder_step > best->info().ladder_step) best = k;
        return best;
    }
};

}  // namespace fastgemm
