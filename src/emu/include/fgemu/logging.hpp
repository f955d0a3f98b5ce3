// Shader logging (metal_logging, Metal 3.2): os_log and os_log_default. Messages go to the
// emulator's log (standard error of the process that runs the dispatch), formatted by the
// runtime; the shader itself calls no host function.
#pragma once

#include "fgemu/types.hpp"

namespace metal {

namespace fgemu_detail {
template <class A>
double log_arg(const A& a) {
    if constexpr (fgemu::is_scalar_v<A>) return double(float(a));
    else return 0.0;
}
}  // namespace fgemu_detail

struct os_log {
    constexpr os_log() = default;
    constexpr os_log(const char*, const char*) {}
    template <class... A>
    void log(const char* fmt, A... a) const { fgemu::shader_log(fmt, sizeof...(A), std::initializer_list<double>{fgemu_detail::log_arg(a)..., 0.0}.begin()); }
    template <class... A>
    void log_debug(const char* fmt, A... a) const { log(fmt, a...); }
    template <class... A>
    void log_info(const char* fmt, A... a) const { log(fmt, a...); }
    template <class... A>
    void log_error(const char* fmt, A... a) const { log(fmt, a...); }
    template <class... A>
    void log_fault(const char* fmt, A... a) const { log(fmt, a...); }
};
constexpr os_log os_log_default;

}  // namespace metal
