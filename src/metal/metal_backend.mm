// The "metal" backend: Apple GPUs through Metal (built on Apple platforms only).
//
// Available when the process has a Metal device. Every ladder kernel is registered whatever
// the GPU, as under metal-emu; the status lists the kernels this GPU cannot run and why
// ("kernel <name>" properties), and running one raises BackendUnavailableError with the same
// reason. auto_priority sits below the cpu backend: nothing here has run on Apple hardware
// yet (docs/apple-silicon.md), so backend="auto" keeps choosing the tested CPU path until it
// has; pass backend="metal" to use the GPU.
#import "metal/metal_context.h"
#import "metal/metal_kernels.h"

#include "core/backend.hpp"
#include "core/backends.hpp"
#include "core/registry.hpp"

namespace fastgemm {

namespace {

using metal_host::MetalContext;

class MetalBackend final : public Backend {
public:
    std::string name() const override { return "metal"; }
    int auto_priority() const override { return 5; }
    BackendStatus status() const override {
        BackendStatus s;
        s.name = "metal";
        MetalContext* ctx = MetalContext::get();
        if (!ctx) {
            s.available = false;
            s.reason = MetalContext::unavailable_reason();
            return s;
        }
        const metal_host::DeviceCaps& caps = ctx->caps();
        s.available = true;
        s.device = caps.name + (caps.apple_family
                                    ? " (MTLGPUFamilyApple" + std::to_string(caps.apple_family) + ")"
                                    : std::string());
        s.properties = ctx->properties();
        for (const metal_ladder::LadderKernel& k : metal_ladder::ladder()) {
            std::string why = metal_host::device_unsupported_reason(k, caps);
            if (!why.empty()) s.properties.emplace_back("kernel " + k.name, "unavailable: " + why);
        }
        if (!caps.mps) {
            s.properties.emplace_back("kernel mps",
                                      "unavailable: MPSSupportsMTLDevice() is false for this GPU");
        }
        return s;
    }
};

}  // namespace

void register_metal_backend(Registry& r) {
    r.add_backend(std::make_unique<MetalBackend>());
    MetalContext* ctx = MetalContext::get();
    const metal_host::DeviceCaps* caps = ctx ? &ctx->caps() : nullptr;
    metal_host::register_mps_baseline(r, caps);
    for (const metal_ladder::LadderKernel& k : metal_ladder::ladder())
        r.add_kernel(metal_host::make_ladder_kernel(k, caps));
}

}  // namespace fastgemm
