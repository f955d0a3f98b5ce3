// Types of the resources metal-emu does not model (textures, samplers, imageblocks): they
// exist so that a source using them compiles, and any use fails the dispatch with
// "unsupported: <type>". Kernels that take them as arguments are refused by name at dispatch.
#pragma once

#include "fgemu/types.hpp"

namespace metal {

enum class access { read, write, read_write, sample };
enum memory_coherence { memory_coherence_threadgroup, memory_coherence_device };
namespace fgemu_detail {
struct unsupported_resource {
    const char* what;
    template <class... A>
    [[noreturn]] void use(A&&...) const { fgemu::unsupported(what); }
};
}  // namespace fgemu_detail

template <class T>
using texel4 = vec<T, 4>;  // what color textures return
template <class T>
using texel1 = T;          // what depth textures return
#define FG_TEXTURE(name, texel)                                                                 \
    template <class T, access A = access::sample, auto... Rest>                                 \
    struct name {                                                                               \
        template <class... X> texel<T> read(X&&...) const { fgemu::unsupported(#name); }       \
        template <class... X> texel<T> sample(X&&...) const { fgemu::unsupported(#name); }     \
        template <class... X> texel<T> sample_compare(X&&...) const { fgemu::unsupported(#name); } \
        template <class... X> vec<T, 4> gather(X&&...) const { fgemu::unsupported(#name); }    \
        template <class... X> void write(X&&...) const { fgemu::unsupported(#name); }          \
        template <class... X> uint get_width(X&&...) const { fgemu::unsupported(#name); }      \
        template <class... X> uint get_height(X&&...) const { fgemu::unsupported(#name); }     \
        template <class... X> uint get_depth(X&&...) const { fgemu::unsupported(#name); }      \
        template <class... X> uint get_array_size(X&&...) const { fgemu::unsupported(#name); } \
        template <class... X> uint get_num_mip_levels(X&&...) const { fgemu::unsupported(#name); } \
        template <class... X> void fence(X&&...) const { fgemu::unsupported(#name); }          \
    };
FG_TEXTURE(texture1d, texel4)
FG_TEXTURE(texture1d_array, texel4)
FG_TEXTURE(texture2d, texel4)
FG_TEXTURE(texture2d_array, texel4)
FG_TEXTURE(texture2d_ms, texel4)
FG_TEXTURE(texture2d_ms_array, texel4)
FG_TEXTURE(texture3d, texel4)
FG_TEXTURE(texturecube, texel4)
FG_TEXTURE(texturecube_array, texel4)
FG_TEXTURE(texture_buffer, texel4)
FG_TEXTURE(depth2d, texel1)
FG_TEXTURE(depth2d_array, texel1)
FG_TEXTURE(depthcube, texel1)
FG_TEXTURE(depth2d_ms, texel1)
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
