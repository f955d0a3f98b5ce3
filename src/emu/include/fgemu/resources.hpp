// Types of the resources metal-emu does not model (textures, samplers, imageblocks): they
// exist so that a source using them compiles, and any use fails the dispatch with
// "unsupported: <type>". Kernels that take them as arguments are refused by name at dispatch.
#pragma once

#include "fgemu/types.hpp"

namespace metal {

enum class access { read, write, read_write, sample };
namespace fgemu_detail {
struct unsupported_resource {
    const char* what;
    template <class... A>
    [[noreturn]] void use(A&&...) const { fgemu::unsupported(what); }
};
}  // namespace fgemu_detail

#define FG_TEXTURE(name)                                                                        \
    template <class T, access A = access::sample, class... Rest>                                \
    struct name {                                                                               \
        template <class... X> vec<T, 4> read(X&&...) const { fgemu::unsupported(#name); }      \
        template <class... X> vec<T, 4> sample(X&&...) const { fgemu::unsupported(#name); }    \
        template <class... X> vec<T, 4> gather(X&&...) const { fgemu::unsupported(#name); }    \
        template <class... X> void write(X&&...) const { fgemu::unsupported(#name); }          \
        template <class... X> uint get_width(X&&...) const { fgemu::unsupported(#name); }      \
        template <class... X> uint get_height(X&&...) const { fgemu::unsupported(#name); }     \
        template <class... X> uint get_depth(X&&...) const { fgemu::unsupported(#name); }      \
        template <class... X> uint get_array_size(X&&...) const { fgemu::unsupported(#name); } \
        template <class... X> uint get_num_mip_levels(X&&...) const { fgemu::unsupported(#name); } \
        template <class... X> void fence(X&&...) const { fgemu::unsupported(#name); }          \
    };
FG_TEXTURE(texture1d)
FG_TEXTURE(texture1d_array)
FG_TEXTURE(texture2d)
FG_TEXTURE(texture2d_array)
FG_TEXTURE(texture2d_ms)
FG_TEXTURE(texture2d_ms_array)
FG_TEXTURE(texture3d)
FG_TEXTURE(texturecube)
FG_TEXTURE(texturecube_array)
FG_TEXTURE(texture_buffer)
FG_TEXTURE(depth2d)
FG_TEXTURE(depth2d_array)
FG_TEXTURE(depthcube)
FG_TEXTURE(depth2d_ms)
#undef FG_TEXTURE

struct sampler {
    template <class... A>
    constexpr sampler(A...) {}
};
namespace coord { enum coord_t { normalized, pixel }; }
namespace filter { enum filter_t { nearest, linear }; }
namespace address { enum address_t { clamp_to_edge, clamp_to_zero, clamp_to_border, repeat, mirrored_repeat }; }
namespace mip_filter { enum mip_filter_t { none, nearest, linear }; }
namespace compare_func { enum compare_func_t { never, less, less_equal, greater, greater_equal, equal, not_equal, always }; }
using coord::normalized;
using coord::pixel;
struct level { uint l; constexpr explicit level(uint x) : l(x) {} };
struct bias { float b; constexpr explicit bias(float x) : b(x) {} };
struct min_lod_clamp { float c; constexpr explicit min_lod_clamp(float x) : c(x) {} };

}  // namespace metal
