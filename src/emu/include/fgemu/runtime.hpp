// The emulator runtime as the shim headers and the generated glue see it: the state of the
// running emulated thread, barriers, SIMD-group exchange, error reporting, and dispatch.
// Plain C++ (no MSL keyword macros are active here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace fgemu {

constexpr uint32_t kSimdWidth = 32;                 // threads per SIMD-group on Apple GPUs
constexpr uint32_t kMaxThreadsPerThreadgroup = 1024;
constexpr size_t kMaxThreadgroupMemory = 32768;     // maxThreadgroupMemoryLength on M1-M5
constexpr uint32_t kMaxOsThreads = 1024;            // DispatchOptions::os_threads

// An emulator finding: a kernel error, a bad dispatch, or an unsupported construct.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// A dispatch whose geometry or threadgroup memory no Apple GPU accepts: the caller's
// argument, reported as such (fastgemm.emu raises ArgumentError), not a shader finding.
struct DispatchError : Error {
    using Error::Error;
};

struct U3 {
    uint32_t x = 1, y = 1, z = 1;
};

// The position/index attributes of one emulated thread.
enum class Attr : int {
    thread_position_in_grid,
    threads_per_grid,
    thread_position_in_threadgroup,
    threads_per_threadgroup,
    threadgroup_position_in_grid,
    threadgroups_per_grid,
    dispatch_threads_per_threadgroup,
    thread_index_in_threadgroup,
    thread_index_in_simdgroup,
    simdgroup_index_in_threadgroup,
    threads_per_simdgroup,
    simdgroups_per_threadgroup,
    dispatch_simdgroups_per_threadgroup,
    thread_execution_width,
    thread_index_in_quadgroup,
    quadgroup_index_in_threadgroup,
    quadgroups_per_threadgroup,
    grid_origin,  // origin of a dispatch-base grid: always 0 here
};

struct ThreadState {
    U3 pos_in_grid, pos_in_group, group_pos;
    uint32_t index = 0;  // thread_index_in_threadgroup
    uint32_t simd_index = 0, lane = 0;
    struct Group* group = nullptr;
    // scheduler bookkeeping
    enum class Wait { runnable, barrier, simd, done } wait = Wait::runnable;
    const char* barrier_file = nullptr;
    int barrier_line = 0;
    int barrier_column = 0;
    uint64_t barriers_passed = 0;
    class Fiber* fiber = nullptr;
};

// Currently running emulated thread (one per worker OS thread).
ThreadState& current();

// threadgroup_barrier: every live thread of the group must arrive (file:line = call site).
void group_barrier(const char* file, int line, int column = 0);
// Waits for the live lanes of the caller's SIMD-group that are not blocked elsewhere;
// returns a bitmask of the lanes that took part.
uint32_t simd_sync();
// Lets the other threads of the caller's group run (the caller stays runnable): atomics
// call it so that a thread spinning on another thread's flag makes progress. A no-op
// outside a kernel.
void yield_to_group();
// 32 lanes x 64 bytes of exchange space for the caller's SIMD-group.
unsigned char* simd_slots();
// Threads in the caller's threadgroup, SIMD-groups in it.
uint32_t threads_in_group();
uint32_t simdgroups_in_group();
U3 threads_per_group();
U3 groups_per_grid();

// Ends the emulated dispatch with an error (never returns to the kernel).
[[noreturn]] void fail(const std::string& message);
// A construct the emulator does not implement: fails with its name.
[[noreturn]] void unsupported(const char* construct);
// Called after each `threadgroup` variable declaration: poisons it (NaN bytes) once per
// threadgroup, and counts it against the 32 KiB threadgroup-memory limit.
void tg_var(void* p, size_t bytes);
// A threadgroup argument without [[threadgroup(n)]] (as naga writes workgroup variables):
// `bytes` of per-group memory for parameter `slot`, poisoned, counted against 32 KiB.
void* auto_threadgroup_memory(int slot, size_t bytes);
// os_log: printf-style message with up to `n` numeric arguments, to the emulator's log.
void shader_log(const char* fmt, size_t n, const double* args);
// Function constants: is_function_constant_defined().
bool fc_defined(const void* var);

// ---- dispatch --------------------------------------------------------------------------

struct ArgRole {
    enum Kind : int { buffer, threadgroup_mem, attribute, threadgroup_auto, texture, sampler } kind;
    int index;  // buffer / threadgroup index, or Attr
};

using InvokeFn = void (*)(const ArgRole* roles);

struct FunctionConstant {
    int index;
    const char* name;
    void* var;
    size_t size;
    char kind;  // how a host value is encoded: see constant_kind()
};

// 'b' bool, 'i' integer, 'f' floating point (half included), '?' anything else (vectors,
// bfloat): the host refuses a float for an integer constant instead of storing its bits.
template <class T>
constexpr char constant_kind() {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, bool>) return 'b';
    else if constexpr (std::is_integral_v<U>) return 'i';
    else if constexpr (std::is_floating_point_v<U> || std::is_same_v<U, _Float16>) return 'f';
    else return '?';
}

// An argument buffer that a kernel binds at [[buffer(buffer_index)]]: a struct with
// [[id(n)]] members, which the host encodes member by member before the dispatch.
struct ArgBufferParam {
    int buffer_index;
    const char* struct_name;
    size_t size;
    // Stores the resource or bytes for [[id(id)]] into the struct at obj: n bytes at ptr
    // (for a pointer member, the address itself), or with `texture` the TextureBinding at
    // ptr. Throws std::invalid_argument naming the member when the struct cannot hold them.
    void (*set)(void* obj, int id, void* ptr, size_t n, bool texture);
};

struct KernelEntry {
    const char* name;       // function name or [[host_name]]
    InvokeFn invoke;        // calls the kernel with arguments bound from current()
    const ArgRole* roles;
    int nroles;
    const char* location;   // "file.metal:line"
    const ArgBufferParam* argbufs = nullptr;
    int nargbufs = 0;
};

// One translated source: its kernels, function constants, and the function that recomputes
// the program-scope constants derived from function constants.
struct Module {
    const KernelEntry* entries;
    int nentries;
    const FunctionConstant* fcs;
    int nfcs;
    void (*derived_constants)();
};

struct Binding {
    void* ptr = nullptr;
    size_t size = 0;
};

// A texture as the host binds it: texels of `channels` components of one storage format,
// x fastest, then y, z, then the array slice (or cube face).
struct TextureBinding {
    enum Format : uint32_t { f32, f16, i32, u32, i16, u16, i8, u8 };
    // What the host made it (fastgemm.emu.Texture's kind): an argument of a texture type
    // that takes another kind refuses it, as Metal's validation does. unknown: not said.
    enum Kind : uint32_t { unknown, k1d, k1d_array, k2d, k2d_array, kcube, k3d, kbuffer };
    void* ptr = nullptr;
    uint32_t width = 0, height = 1, depth = 1, slices = 1, channels = 1;
    Format format = f32;
    Kind kind = unknown;
    size_t bytes() const;
};
// The name fastgemm.emu.Texture gives a kind ("2d_array", ...).
const char* texture_kind_name(TextureBinding::Kind kind);

enum class Order : int { natural = 0, reversed = 1, shuffled = 2 };

struct DispatchOptions {
    bool strict = false;            // barrier divergence and mismatched barriers are errors
    Order order = Order::natural;   // order in which a group's threads are first run
    uint64_t seed = 1;              // for Order::shuffled
    int os_threads = 0;             // 0: FGEMU_THREADS or the hardware concurrency
    bool guard_buffers = true;      // copy buffers between canaries; report writes past them
    size_t stack_kb = 0;            // fiber stack per thread; 0: FGEMU_STACK_KB or the default
    double time_limit_s = 0;        // > 0: a dispatch running longer ends the process with a
                                    // report (only where fault handlers are installed)
    // Polled, with stop_context, on the dispatch's threads before every threadgroup and at
    // every barrier step of each: once it returns true the dispatch ends early (run
    // returns false) and the buffers hold whatever the groups that ran wrote. fastgemm's
    // backend passes its caller's Ctrl-C watch. (A pointer and a context, not a
    // std::function: every emulated shader includes this header.)
    bool (*stop_requested)(const void* stop_context) = nullptr;
    const void* stop_context = nullptr;
};

struct Dispatch {
    U3 threadgroups, threads_per_threadgroup;
    std::vector<Binding> buffers;           // index -> binding (ptr may be null: unbound)
    std::vector<size_t> threadgroup_memory; // index -> bytes
    std::vector<TextureBinding> textures;   // index -> texture (ptr may be null: unbound)
};

// Kernels compiled into this module (registered by the generated glue).
const std::vector<KernelEntry>& kernels();
const std::vector<FunctionConstant>& function_constants();
const KernelEntry* find_kernel(const std::string& name);
void register_module(const Module& m);
// Marks function constant `index` as set (value already copied) or clears all.
void set_function_constant(int index, const void* value, size_t size);
void clear_function_constants();
// Recomputes every module's constants that derive from function constants.
void update_derived_constants();

// Runs one dispatch to completion (true) or until opt.stop_requested says stop (false).
// Throws fgemu::Error.
bool run(const KernelEntry& k, const Dispatch& d, const DispatchOptions& opt);

// Internal: buffers the running dispatch bound.
const Binding& bound_buffer(int index);
const TextureBinding* bound_texture(int index);
void* bound_threadgroup_memory(int index);

}  // namespace fgemu
