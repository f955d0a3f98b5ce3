// C entry points of a module compiled by fastgemm.emu (loaded with ctypes in the worker
// process that runs dispatches). Only these symbols are exported; everything else in the
// module has hidden visibility so that two modules never share emulator state.
#include <cstring>
#include <deque>
#include <string>

#include "faults.hpp"
#include "fgemu/runtime.hpp"

#define FGEMU_EXPORT extern "C" __attribute__((visibility("default")))

// The translated source's table (FGEMU_MODULE in the glue).
extern "C" const fgemu::Module* fgemu_module();

namespace {
void put(char* out, size_t n, const std::string& s) {
    if (!out || n == 0) return;
    std::strncpy(out, s.c_str(), n - 1);
    out[n - 1] = '\0';
}
constexpr int kTextureDescWords = 7;  // fastgemm.emu.Texture.desc's length
// A texture's texels at ptr, described by seven numbers: width, height, depth, slices,
// channels, format, kind (fastgemm.emu.Texture.desc).
fgemu::TextureBinding texture_binding(void* ptr, const unsigned* q) {
    fgemu::TextureBinding t;
    t.ptr = ptr;
    t.width = q[0];
    t.height = q[1];
    t.depth = q[2];
    t.slices = q[3];
    t.channels = q[4];
    t.format = fgemu::TextureBinding::Format(q[5]);
    t.kind = fgemu::TextureBinding::Kind(q[6]);
    return t;
}
// The module registers on first use rather than in a static initialiser: loading it runs
// none of its code.
void ensure_registered() {
    static const bool done = (fgemu::register_module(*fgemu_module()), true);
    (void)done;
}
}  // namespace

// Fatal signals of later dispatches are reported into `report` (see faults.hpp).
FGEMU_EXPORT void fgemu_c_install_fault_handlers(char* report, size_t n) {
    fgemu::install_fault_handlers(report, n);
}

// Newline-separated kernel names; returns the length needed.
FGEMU_EXPORT size_t fgemu_c_list(char* out, size_t n) {
    ensure_registered();
    std::string s;
    for (const auto& k : fgemu::kernels()) {
        if (!k.name) continue;
        s += k.name;
        s += '\n';
    }
    put(out, n, s);
    return s.size() + 1;
}

// Newline-separated "buffer N" / "texture N" for each [[buffer(N)]] and [[texture(N)]]
// argument of `kernel`, in declaration order (empty for an unknown kernel); returns the
// length needed. Lets a caller refuse a dispatch that leaves one unbound before it runs.
FGEMU_EXPORT size_t fgemu_c_bindings(const char* kernel, char* out, size_t n) {
    ensure_registered();
    std::string s;
    if (const fgemu::KernelEntry* k = fgemu::find_kernel(kernel)) {
        for (int i = 0; i < k->nroles; ++i) {
            const fgemu::ArgRole& r = k->roles[i];
            if (r.kind == fgemu::ArgRole::buffer) s += "buffer " + std::to_string(r.index) + "\n";
            if (r.kind == fgemu::ArgRole::texture) s += "texture " + std::to_string(r.index) + "\n";
        }
    }
    put(out, n, s);
    return s.size() + 1;
}

// Returns 0 on success, 1 on an emulator error (message in err), 2 for an unknown kernel,
// 4 for a dispatch no Apple GPU accepts (geometry, threadgroup memory).
FGEMU_EXPORT int fgemu_c_run(const char* kernel, const unsigned* groups, const unsigned* tpg,
                             int nbuf, void* const* ptrs, const size_t* sizes, int ntg,
                             const size_t* tg_lens, int nfc, const int* fc_index,
                             void* const* fc_values, const size_t* fc_sizes, int strict,
                             int order, unsigned long long seed, int os_threads,
                             size_t stack_kb, double time_limit_s, int ntex,
                             void* const* tex_ptrs, const unsigned* tex_desc, char* err,
                             size_t errlen) {
    ensure_registered();
    const fgemu::KernelEntry* k = fgemu::find_kernel(kernel);
    if (!k) {
        std::string names;
        for (const auto& e : fgemu::kernels())
            if (e.name) names += std::string(names.empty() ? "" : ", ") + e.name;
        put(err, errlen, std::string("no kernel named '") + kernel + "' in this source (kernels: " +
                             (names.empty() ? "none" : names) + ")");
        return 2;
    }
    try {
        fgemu::Dispatch d;
        d.threadgroups = fgemu::U3{groups[0], groups[1], groups[2]};
        d.threads_per_threadgroup = fgemu::U3{tpg[0], tpg[1], tpg[2]};
        for (int i = 0; i < nbuf; ++i) d.buffers.push_back(fgemu::Binding{ptrs[i], sizes[i]});
        for (int i = 0; i < ntg; ++i) d.threadgroup_memory.push_back(tg_lens[i]);
        for (int i = 0; i < ntex; ++i) d.textures.push_back(texture_binding(tex_ptrs[i], tex_desc + kTextureDescWords * i));
        fgemu::clear_function_constants();
        for (int i = 0; i < nfc; ++i)
            fgemu::set_function_constant(fc_index[i], fc_values[i], fc_sizes[i]);
        fgemu::update_derived_constants();
        fgemu::DispatchOptions o;
        o.strict = strict != 0;
        o.order = fgemu::Order(order);
        o.seed = seed;
        o.os_threads = os_threads;
        o.stack_kb = stack_kb;
        o.time_limit_s = time_limit_s;
        fgemu::run(*k, d, o);
    } catch (const fgemu::DispatchError& e) {
        put(err, errlen, e.what());
        return 4;
    } catch (const std::exception& e) {
        put(err, errlen, e.what());
        return 1;
    }
    return 0;
}

// Newline-separated "index name size kind" of the source's function constants (kind as
// fgemu::constant_kind gives it).
FGEMU_EXPORT size_t fgemu_c_constants(char* out, size_t n) {
    ensure_registered();
    std::string s;
    for (const auto& fc : fgemu::function_constants())
        s += std::to_string(fc.index) + " " + fc.name + " " + std::to_string(fc.size) + " " + fc.kind + "\n";
    put(out, n, s);
    return s.size() + 1;
}

namespace {
const fgemu::ArgBufferParam* argbuf_param(const char* kernel, int index) {
    const fgemu::KernelEntry* k = fgemu::find_kernel(kernel);
    if (!k) return nullptr;
    for (int i = 0; i < k->nargbufs; ++i)
        if (k->argbufs[i].buffer_index == index) return &k->argbufs[i];
    return nullptr;
}

// The textures that argument buffers of the coming dispatch point to; a texture member
// holds the address of its binding, so they live until the next dispatch is encoded.
std::deque<fgemu::TextureBinding>& argbuf_textures() {
    static std::deque<fgemu::TextureBinding> textures;
    return textures;
}
}  // namespace

// The size of the argument-buffer struct `kernel` binds at [[buffer(index)]] (its name in
// `name`), or 0 where that index is not an argument buffer.
FGEMU_EXPORT size_t fgemu_c_argbuf_size(const char* kernel, int index, char* name, size_t n) {
    ensure_registered();
    const fgemu::ArgBufferParam* a = argbuf_param(kernel, index);
    if (!a) return 0;
    put(name, n, a->struct_name);
    return a->size;
}

FGEMU_EXPORT void fgemu_c_argbuf_begin() { argbuf_textures().clear(); }

// Encodes [[id(id)]] of that struct at obj: from n bytes at ptr (for a pointer member, the
// address itself), or with a texture description (width, height, depth, slices, channels,
// format, kind: as for fgemu_c_run) the texture whose texels are at ptr. Returns 0, or 4 with the
// reason in err.
FGEMU_EXPORT int fgemu_c_argbuf_set(const char* kernel, int index, void* obj, int id, void* ptr,
                                    size_t n, const unsigned* tex_desc, char* err, size_t errlen) {
    ensure_registered();
    const fgemu::ArgBufferParam* a = argbuf_param(kernel, index);
    if (!a) {
        put(err, errlen, "not an argument buffer");
        return 4;
    }
    try {
        if (tex_desc) {
            fgemu::TextureBinding& t = argbuf_textures().emplace_back(texture_binding(ptr, tex_desc));
            a->set(obj, id, &t, sizeof t, true);
        } else {
            a->set(obj, id, ptr, n, false);
        }
    } catch (const std::exception& e) {
        put(err, errlen, e.what());
        return 4;
    }
    return 0;
}
