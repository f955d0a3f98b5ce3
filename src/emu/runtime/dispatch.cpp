// The dispatch engine: threadgroups spread over OS threads, each group's threads run as
// fibers by a round-robin scheduler that releases barriers and SIMD-group exchanges.
//
// Determinism: a group's threads always start in the same order (natural, reversed, or a
// permutation seeded by the group id), a barrier releases only when every live thread has
// arrived, and groups share nothing but device memory, so results do not depend on how
// many OS threads run the groups.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "faults.hpp"
#include "fgemu/runtime.hpp"
#include "fiber.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FGEMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FGEMU_ASAN 1
#endif
#if defined(FGEMU_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace fgemu {

struct Group {
    const KernelEntry* kernel = nullptr;
    const Dispatch* d = nullptr;
    const DispatchOptions* opt = nullptr;
    std::vector<ThreadState>* threads = nullptr;
    uint32_t nthreads = 0, nsimd = 0;
    std::vector<unsigned char>* slots = nullptr;   // nsimd * 32 * 64
    std::vector<uint32_t> simd_mask;               // lanes released together, per SIMD-group
    std::vector<std::vector<unsigned char>>* dyn_tg = nullptr;
    std::vector<std::vector<unsigned char>>* auto_tg = nullptr;  // naga-style threadgroup args
    size_t tg_bytes = 0;
    uint64_t generation = 0;
    FiberHost host;
    bool failed = false;
    bool stopped = false;  // opt->stop_requested ended the group between barrier steps
    std::string error;
};

namespace {

thread_local ThreadState* t_current = nullptr;
thread_local uint64_t t_generation = 0;
thread_local std::unordered_map<void*, uint64_t>* t_poisoned = nullptr;
thread_local U3 t_group_pos;
thread_local const KernelEntry* t_kernel = nullptr;

std::vector<KernelEntry>& kernel_table() {
    static std::vector<KernelEntry> t;
    return t;
}
std::vector<FunctionConstant>& fc_table() {
    static std::vector<FunctionConstant> t;
    return t;
}
std::vector<const void*>& fc_set() {
    static std::vector<const void*> t;
    return t;
}
std::vector<void (*)()>& derived_table() {
    static std::vector<void (*)()> t;
    return t;
}

constexpr size_t kMinStackKb = 16, kMaxStackKb = 1 << 20;

// Fiber stack size: DispatchOptions::stack_kb, else FGEMU_STACK_KB, else 256 KiB (1 MiB
// under ASan, whose frames are larger).
size_t stack_bytes(size_t requested_kb) {
    size_t kb = requested_kb;
    if (kb == 0) {
        if (const char* e = std::getenv("FGEMU_STACK_KB")) {
            char* end = nullptr;
            const unsigned long v = std::strtoul(e, &end, 10);
            if (!*e || *end || v < kMinStackKb || v > kMaxStackKb)
                throw Error(std::string("FGEMU_STACK_KB=") + e + " must be a whole number of KiB in " +
                            std::to_string(kMinStackKb) + ".." + std::to_string(kMaxStackKb));
            kb = v;
        }
    }
#if defined(FGEMU_ASAN)
    if (kb == 0) kb = 1024;
#else
    if (kb == 0) kb = 256;
#endif
    if (kb < kMinStackKb || kb > kMaxStackKb)
        throw Error("stack size of " + std::to_string(kb) + " KiB out of range " +
                    std::to_string(kMinStackKb) + ".." + std::to_string(kMaxStackKb) + " KiB");
    return kb * 1024;
}

// Fibers are expensive to map; workers borrow sets of them from this pool.
// vm.max_map_count where the kernel has one (Linux), else a generous bound.
uint64_t max_map_count() {
    static const uint64_t n = [] {
        uint64_t v = 0;
        std::ifstream f("/proc/sys/vm/max_map_count");
        if (!(f >> v) || v == 0) v = 1u << 20;
        return v;
    }();
    return n;
}

// A set holds fibers of one stack size; sets beyond what a dispatch can use are unmapped.
struct FiberPool {
    std::mutex mu;
    std::vector<std::vector<std::unique_ptr<Fiber>>> free_sets;
    size_t bytes = 0;
    std::vector<std::unique_ptr<Fiber>> take(size_t n, size_t stack) {
        std::vector<std::unique_ptr<Fiber>> s;
        {
            std::lock_guard<std::mutex> lock(mu);
            if (stack != bytes) {
                free_sets.clear();
                bytes = stack;
            }
            if (!free_sets.empty()) {
                s = std::move(free_sets.back());
                free_sets.pop_back();
            }
        }
        try {
            while (s.size() < n) s.push_back(std::make_unique<Fiber>(stack));
        } catch (const std::bad_alloc&) {
            throw Error("cannot map " + std::to_string(n) + " fiber stacks of " +
                        std::to_string(stack / 1024) + " KiB (address space or map count "
                        "exhausted; use fewer OS threads or a smaller FGEMU_STACK_KB)");
        }
        return s;
    }
    void give(std::vector<std::unique_ptr<Fiber>> s, size_t keep_sets) {
        std::lock_guard<std::mutex> lock(mu);
        if (!s.empty() && s.front() && free_sets.size() < keep_sets) free_sets.push_back(std::move(s));
    }
};
FiberPool& fiber_pool() {
    static FiberPool* p = new FiberPool;  // leaked on purpose: no exit-order issues
    return *p;
}

std::string u3s(const U3& u) {
    return "(" + std::to_string(u.x) + ", " + std::to_string(u.y) + ", " + std::to_string(u.z) + ")";
}

void fiber_entry(void* arg) {
    ThreadState* t = static_cast<ThreadState*>(arg);
    Group* g = t->group;
    t->fiber->entered(g->host);
    try {
        g->kernel->invoke(g->kernel->roles);
    } catch (const std::exception& e) {
        if (!g->failed) {
            g->failed = true;
            g->error = std::string("C++ exception thrown in the kernel: ") + e.what() +
                       " (thread " + u3s(t->pos_in_group) + ")";
        }
    } catch (...) {
        if (!g->failed) {
            g->failed = true;
            g->error = "C++ exception thrown in the kernel (thread " + u3s(t->pos_in_group) + ")";
        }
    }
    t->wait = ThreadState::Wait::done;
    t->fiber->yield(g->host, true);
}

std::string site(const ThreadState& t, bool with_column = false) {
    return std::string(t.barrier_file ? t.barrier_file : "?") + ":" + std::to_string(t.barrier_line) +
           (with_column ? " (column " + std::to_string(t.barrier_column) + " of the translated line)" : "");
}

// Runs every thread of one group to completion (or to the first error, or to a stop
// request, which is polled once per barrier step: a group can run for seconds).
void run_group(Group& g, std::vector<ThreadState>& th, const std::vector<int>& order) {
    for (;;) {
        if (g.opt->stop_requested && g.opt->stop_requested(g.opt->stop_context)) {
            g.stopped = true;
            return;
        }
        for (int i : order) {
            ThreadState& t = th[size_t(i)];
            if (t.wait != ThreadState::Wait::runnable) continue;
            t_current = &t;
            t.fiber->resume(g.host);
            t_current = nullptr;
            if (g.failed) return;
        }
        uint32_t live = 0, at_barrier = 0, runnable = 0;
        for (auto& t : th) {
            if (t.wait != ThreadState::Wait::done) ++live;
            if (t.wait == ThreadState::Wait::barrier) ++at_barrier;
            if (t.wait == ThreadState::Wait::runnable) ++runnable;
        }
        if (live == 0) return;
        if (runnable) continue;  // threads that yielded (atomics) run again first
        // SIMD-group exchanges: release the lanes waiting in simd_sync of every SIMD-group
        // whose other live lanes are all blocked (the blocked ones are inactive lanes).
        bool released = false;
        for (uint32_t s = 0; s < g.nsimd; ++s) {
            uint32_t mask = 0;
            const uint32_t lo = s * kSimdWidth, hi = std::min(g.nthreads, lo + kSimdWidth);
            for (uint32_t i = lo; i < hi; ++i)
                if (th[i].wait == ThreadState::Wait::simd) mask |= 1u << (i - lo);
            if (!mask) continue;
            g.simd_mask[s] = mask;
            for (uint32_t i = lo; i < hi; ++i)
                if (th[i].wait == ThreadState::Wait::simd) th[i].wait = ThreadState::Wait::runnable;
            released = true;
        }
        if (released) continue;
        // Everyone alive waits at a threadgroup barrier.
        const ThreadState* first = nullptr;
        for (auto& t : th)
            if (t.wait == ThreadState::Wait::barrier) {
                first = &t;
                break;
            }
        if (g.opt->strict) {
            for (auto& t : th) {
                if (t.wait == ThreadState::Wait::done) {
                    g.failed = true;
                    g.error = "barrier divergence: thread " + u3s(t.pos_in_group) +
                              " (index " + std::to_string(t.index) +
                              ") returned while " + std::to_string(at_barrier) +
                              " thread(s) wait at threadgroup_barrier at " + site(*first) +
                              " (Apple GPUs let returned threads skip barriers; strict mode "
                              "reports it)";
                    return;
                }
                const bool same_line = t.barrier_line == first->barrier_line &&
                                       std::strcmp(t.barrier_file, first->barrier_file) == 0;
                if (!same_line || t.barrier_column != first->barrier_column) {
                    g.failed = true;
                    g.error = "barrier divergence: thread " + u3s(t.pos_in_group) +
                              " waits at threadgroup_barrier at " + site(t, same_line) + " while thread " +
                              u3s(first->pos_in_group) + " waits at " + site(*first, same_line);
                    return;
                }
            }
        }
        for (auto& t : th)
            if (t.wait == ThreadState::Wait::barrier) {
                t.wait = ThreadState::Wait::runnable;
                ++t.barriers_passed;
            }
    }
}

struct SharedRun {
    const KernelEntry* kernel;
    const Dispatch* d;
    const DispatchOptions* opt;
    uint64_t total_groups;
    std::atomic<uint64_t> next{0};
    std::atomic<bool> abort{false};
    std::atomic<bool> stopped{false};  // a stop request ended the dispatch early
    std::mutex mu;
    std::string error;
    size_t stack = 0;
    size_t keep_sets = 0;
};

void worker(SharedRun& run) {
    const Dispatch& d = *run.d;
    const U3 tpg = d.threads_per_threadgroup;
    const uint32_t n = tpg.x * tpg.y * tpg.z;
    const uint32_t nsimd = (n + kSimdWidth - 1) / kSimdWidth;
    enter_worker_thread();
    std::vector<std::unique_ptr<Fiber>> fibers;
    try {
        fibers = fiber_pool().take(n, run.stack);
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(run.mu);
        if (run.error.empty()) run.error = e.what();
        run.abort = true;
        return;
    }
    std::vector<ThreadState> th(n);
    std::vector<unsigned char> slots(size_t(nsimd) * kSimdWidth * 64);
    std::vector<std::vector<unsigned char>> dyn_tg, auto_tg;
    for (size_t len : d.threadgroup_memory) dyn_tg.emplace_back(len);
    std::unordered_map<void*, uint64_t> poisoned;
    t_poisoned = &poisoned;
    std::vector<int> order(n);

    while (!run.abort.load(std::memory_order_relaxed)) {
        const uint64_t gi = run.next.fetch_add(1);
        if (gi >= run.total_groups) break;
        const U3 gp{uint32_t(gi % d.threadgroups.x),
                    uint32_t((gi / d.threadgroups.x) % d.threadgroups.y),
                    uint32_t(gi / (uint64_t(d.threadgroups.x) * d.threadgroups.y))};
        Group g;
        g.kernel = run.kernel;
        g.d = run.d;
        g.opt = run.opt;
        g.threads = &th;
        g.nthreads = n;
        g.nsimd = nsimd;
        g.slots = &slots;
        g.simd_mask.assign(nsimd, 0);
        g.dyn_tg = &dyn_tg;
        for (auto& a : auto_tg) a.clear();
        g.auto_tg = &auto_tg;
        g.generation = ++t_generation;
        t_group_pos = gp;
        t_kernel = run.kernel;
        for (auto& buf : dyn_tg) {
            std::memset(buf.data(), 0xFF, buf.size());  // NaN: unwritten reads show up
            g.tg_bytes += buf.size();
        }
        for (uint32_t i = 0; i < n; ++i) {
            ThreadState& t = th[i];
            t = ThreadState{};
            t.pos_in_group = U3{i % tpg.x, (i / tpg.x) % tpg.y, i / (tpg.x * tpg.y)};
            t.group_pos = gp;
            t.pos_in_grid = U3{gp.x * tpg.x + t.pos_in_group.x, gp.y * tpg.y + t.pos_in_group.y,
                               gp.z * tpg.z + t.pos_in_group.z};
            t.index = i;
            t.simd_index = i / kSimdWidth;
            t.lane = i % kSimdWidth;
            t.group = &g;
            t.fiber = fibers[i].get();
            t.fiber->reset(&fiber_entry, &t);
            order[i] = int(i);
        }
        if (run.opt->order == Order::reversed) std::reverse(order.begin(), order.end());
        if (run.opt->order == Order::shuffled) {
            std::mt19937_64 rng(run.opt->seed * 0x9E3779B97F4A7C15ull + gi);
            std::shuffle(order.begin(), order.end(), rng);
        }
        run_group(g, th, order);
        if (g.stopped) {
            run.stopped = true;
            run.abort = true;
        }
        if (g.failed) {
            std::lock_guard<std::mutex> lock(run.mu);
            if (run.error.empty())
                run.error = g.error + " [threadgroup " + u3s(gp) + " of kernel " + run.kernel->name + "]";
            run.abort = true;
        }
    }
    t_poisoned = nullptr;
    fiber_pool().give(std::move(fibers), run.keep_sets);
    leave_worker_thread();
}

void check_geometry(const KernelEntry& k, const Dispatch& d) {
    const U3 t = d.threads_per_threadgroup;
    const uint64_t n = uint64_t(t.x) * t.y * t.z;
    if (t.x == 0 || t.y == 0 || t.z == 0 || n > kMaxThreadsPerThreadgroup)
        throw DispatchError("out-of-range dispatch geometry for kernel " + std::string(k.name) +
                    ": threadsPerThreadgroup " + u3s(t) + " must be non-zero with at most " +
                    std::to_string(kMaxThreadsPerThreadgroup) + " threads in total");
    const U3 g = d.threadgroups;
    const char* axis = "xyz";
    const uint32_t gv[3] = {g.x, g.y, g.z}, tv[3] = {t.x, t.y, t.z};
    for (int a = 0; a < 3; ++a)
        if (uint64_t(gv[a]) * tv[a] > 0xffffffffull)
            throw DispatchError("out-of-range dispatch geometry for kernel " + std::string(k.name) + ": " +
                        std::to_string(gv[a]) + " threadgroups of " + std::to_string(tv[a]) +
                        " threads along " + axis[a] + " exceed the 2^32 threads per grid dimension "
                        "that [[thread_position_in_grid]] can index");
    uint64_t groups = 0;
    if (__builtin_mul_overflow(uint64_t(g.x), uint64_t(g.y), &groups) ||
        __builtin_mul_overflow(groups, uint64_t(g.z), &groups))
        throw DispatchError("out-of-range dispatch geometry for kernel " + std::string(k.name) +
                    ": threadgroups " + u3s(g) + " overflow a 64-bit count");
    size_t tg = 0;
    for (size_t i = 0; i < d.threadgroup_memory.size(); ++i) {
        if (d.threadgroup_memory[i] % 16 != 0)
            throw DispatchError("threadgroup memory length at index " + std::to_string(i) + " (" +
                        std::to_string(d.threadgroup_memory[i]) +
                        " bytes) must be a multiple of 16 (setThreadgroupMemoryLength:atIndex:)");
        tg += d.threadgroup_memory[i];
    }
    if (tg > kMaxThreadgroupMemory)
        throw DispatchError("threadgroup memory lengths total " + std::to_string(tg) +
                    " bytes, more than the 32 KiB of Apple GPUs");
    // [[threadgroup(n)]] arguments need a length.
    for (int i = 0; i < k.nroles; ++i)
        if (k.roles[i].kind == ArgRole::threadgroup_mem &&
            (size_t(k.roles[i].index) >= d.threadgroup_memory.size() ||
             d.threadgroup_memory[size_t(k.roles[i].index)] == 0))
            throw DispatchError("kernel " + std::string(k.name) + " has a [[threadgroup(" +
                        std::to_string(k.roles[i].index) +
                        ")]] argument but no threadgroup memory length was set for it");
}

constexpr size_t kGuard = 4096;
constexpr unsigned char kCanary = 0xA5;

struct GuardedBuffer {
    unsigned char* mem = nullptr;
    size_t size = 0;
    unsigned char* data() const { return mem + kGuard; }
};

}  // namespace

ThreadState& current() {
    if (!t_current) throw Error("Metal built-in called outside an emulated kernel");
    return *t_current;
}

void group_barrier(const char* file, int line, int column) {
    ThreadState& t = current();
    t.wait = ThreadState::Wait::barrier;
    t.barrier_file = file;
    t.barrier_line = line;
    t.barrier_column = column;
    t.fiber->yield(t.group->host);
}

uint32_t simd_sync() {
    ThreadState& t = current();
    t.wait = ThreadState::Wait::simd;
    t.fiber->yield(t.group->host);
    return t.group->simd_mask[t.simd_index];
}

unsigned char* simd_slots() {
    ThreadState& t = current();
    return t.group->slots->data() + size_t(t.simd_index) * kSimdWidth * 64;
}

uint32_t threads_in_group() { return current().group->nthreads; }
uint32_t simdgroups_in_group() { return current().group->nsimd; }
U3 threads_per_group() { return current().group->d->threads_per_threadgroup; }
U3 groups_per_grid() { return current().group->d->threadgroups; }

void fail(const std::string& message) {
    ThreadState& t = current();
    Group& g = *t.group;
    if (!g.failed) {
        g.failed = true;
        g.error = message + " (thread " + u3s(t.pos_in_group) + ")";
    }
    t.wait = ThreadState::Wait::done;
    t.fiber->yield(g.host, true);
    std::abort();  // never resumed
}

void unsupported(const char* construct) {
    fail(std::string("unsupported by metal-emu: ") + construct);
}

void tg_var(void* p, size_t bytes) {
    ThreadState& t = current();
    Group& g = *t.group;
    uint64_t& seen = (*t_poisoned)[p];
    if (seen == g.generation) return;
    seen = g.generation;
    std::memset(p, 0xFF, bytes);  // NaN for floats, ~0 for integers
    g.tg_bytes += bytes;
    if (g.tg_bytes > kMaxThreadgroupMemory)
        fail("threadgroup memory of " + std::to_string(g.tg_bytes) +
             " bytes exceeds the 32 KiB of Apple GPUs");
}

bool fc_defined(const void* var) {
    const auto& s = fc_set();
    return std::find(s.begin(), s.end(), var) != s.end();
}

const std::vector<KernelEntry>& kernels() { return kernel_table(); }
const std::vector<FunctionConstant>& function_constants() { return fc_table(); }

const KernelEntry* find_kernel(const std::string& name) {
    for (const auto& k : kernel_table())
        if (name == k.name) return &k;
    return nullptr;
}

void register_module(const Module& m) {
    for (int i = 0; i < m.nentries; ++i)
        if (m.entries[i].name) kernel_table().push_back(m.entries[i]);
    for (int i = 0; i < m.nfcs; ++i)
        if (m.fcs[i].name) fc_table().push_back(m.fcs[i]);
    if (m.derived_constants) derived_table().push_back(m.derived_constants);
}
void update_derived_constants() {
    for (auto f : derived_table()) f();
}

void set_function_constant(int index, const void* value, size_t size) {
    for (const auto& fc : fc_table())
        if (fc.index == index) {
            if (size != fc.size)
                throw Error("function constant " + std::string(fc.name) + " has " +
                            std::to_string(fc.size) + " bytes, value has " + std::to_string(size));
            std::memcpy(fc.var, value, size);
            fc_set().push_back(fc.var);
            return;
        }
    throw Error("no [[function_constant(" + std::to_string(index) + ")]] in this source");
}
// Every constant back to zero and undefined, as in a freshly loaded module: a dispatch that
// leaves one out must not see the value an earlier dispatch gave it.
void clear_function_constants() {
    fc_set().clear();
    for (const auto& fc : fc_table()) std::memset(fc.var, 0, fc.size);
}

void yield_to_group() {
    ThreadState* t = t_current;
    if (!t) return;
    t->wait = ThreadState::Wait::runnable;
    t->fiber->yield(t->group->host);
}

void* auto_threadgroup_memory(int slot, size_t bytes) {
    ThreadState& t = current();
    Group& g = *t.group;
    auto& v = *g.auto_tg;
    if (size_t(slot) >= v.size()) v.resize(size_t(slot) + 1);
    auto& mem = v[size_t(slot)];
    if (mem.empty()) {
        mem.assign(std::max<size_t>(bytes, 1), 0xFF);  // NaN: unwritten reads show up
        g.tg_bytes += bytes;
        if (g.tg_bytes > kMaxThreadgroupMemory)
            fail("threadgroup memory of " + std::to_string(g.tg_bytes) +
                 " bytes exceeds the 32 KiB of Apple GPUs");
    }
    return mem.data();
}

void shader_log(const char* fmt, size_t n, const double* args) {
    std::string out;
    size_t k = 0;
    for (const char* p = fmt; *p; ++p) {
        if (*p != '%') {
            out += *p;
            continue;
        }
        if (p[1] == '%') {
            out += '%';
            ++p;
            continue;
        }
        const char* q = p + 1;
        while (*q && std::strchr("-+ #0123456789.hlzjt", *q)) ++q;
        if (!*q) break;
        std::string spec(p, size_t(q - p));
        spec.erase(std::remove_if(spec.begin(), spec.end(),
                                  [](char c) { return std::strchr("hlzjt", c) != nullptr; }),
                   spec.end());
        char buf[128];
        const double v = k < n ? args[k++] : 0.0;
        if (std::strchr("diucxXo", *q)) {
            std::snprintf(buf, sizeof buf, (spec + "ll" + (*q == 'i' ? 'd' : *q)).c_str(), (long long)v);
        } else if (std::strchr("feEgGaA", *q)) {
            std::snprintf(buf, sizeof buf, (spec + *q).c_str(), v);
        } else {
            std::snprintf(buf, sizeof buf, "<%%%c>", *q);
        }
        out += buf;
        p = q;
    }
    ThreadState* t = t_current;
    std::string who = t ? " [threadgroup " + u3s(t->group_pos) + " thread " + u3s(t->pos_in_group) + "]" : "";
    std::fprintf(stderr, "metal-emu log%s: %s\n", who.c_str(), out.c_str());
}

bool describe_running_thread(char* out, size_t n) {
    ThreadState* t = t_current;
    if (!t || !t_kernel) return false;
    std::snprintf(out, n, "kernel %s, threadgroup (%u, %u, %u), thread (%u, %u, %u)", t_kernel->name,
                  t->group_pos.x, t->group_pos.y, t->group_pos.z, t->pos_in_group.x,
                  t->pos_in_group.y, t->pos_in_group.z);
    return true;
}

const void* running_fiber_guard(size_t* bytes) {
    ThreadState* t = t_current;
    if (!t) return nullptr;
    return t->fiber->guard(bytes);
}

size_t TextureBinding::bytes() const {
    static const size_t elem[] = {4, 2, 4, 4, 2, 2, 1, 1};
    return size_t(width) * height * depth * slices * channels * elem[format];
}

const char* texture_kind_name(TextureBinding::Kind kind) {
    switch (kind) {
        case TextureBinding::k1d: return "1d";
        case TextureBinding::k1d_array: return "1d_array";
        case TextureBinding::k2d: return "2d";
        case TextureBinding::k2d_array: return "2d_array";
        case TextureBinding::kcube: return "cube";
        case TextureBinding::k3d: return "3d";
        case TextureBinding::kbuffer: return "buffer";
        case TextureBinding::unknown: break;
    }
    return "unknown";
}

const TextureBinding* bound_texture(int index) {
    const Dispatch* d = current().group->d;
    if (index < 0 || size_t(index) >= d->textures.size() || !d->textures[size_t(index)].ptr)
        fail("texture(" + std::to_string(index) + ") is not bound");
    return &d->textures[size_t(index)];
}

const Binding& bound_buffer(int index) {
    const Dispatch* d = current().group->d;
    static const Binding none;
    if (index < 0 || size_t(index) >= d->buffers.size()) return none;
    return d->buffers[size_t(index)];
}

void* bound_threadgroup_memory(int index) {
    auto& v = *current().group->dyn_tg;
    if (index < 0 || size_t(index) >= v.size()) return nullptr;
    return v[size_t(index)].data();
}

bool run(const KernelEntry& k, const Dispatch& d_in, const DispatchOptions& opt) {
    check_geometry(k, d_in);
    if (opt.os_threads < 0 || opt.os_threads > int(kMaxOsThreads))
        throw Error("os_threads must be 0 (automatic) or 1.." + std::to_string(kMaxOsThreads) +
                    ", got " + std::to_string(opt.os_threads));
    const size_t stack = stack_bytes(opt.stack_kb);
    const uint64_t total = uint64_t(d_in.threadgroups.x) * d_in.threadgroups.y * d_in.threadgroups.z;
    if (total == 0) return true;

    // Buffers between canaries: a write past either end is reported by name.
    Dispatch d = d_in;
    std::vector<GuardedBuffer> guarded(d.buffers.size());
    if (opt.guard_buffers) {
        for (size_t i = 0; i < d.buffers.size(); ++i) {
            Binding& b = d.buffers[i];
            if (!b.ptr) continue;
            GuardedBuffer& gb = guarded[i];
            gb.size = b.size;
            gb.mem = static_cast<unsigned char*>(std::malloc(b.size + 2 * kGuard));
            if (!gb.mem) throw Error("out of memory for buffer copies");
            std::memset(gb.mem, kCanary, kGuard);
            std::memcpy(gb.data(), b.ptr, b.size);
            std::memset(gb.data() + b.size, kCanary, kGuard);
#if defined(FGEMU_ASAN)
            ASAN_POISON_MEMORY_REGION(gb.mem, kGuard);
            ASAN_POISON_MEMORY_REGION(gb.data() + b.size, kGuard);
#endif
            b.ptr = gb.data();
        }
    }

    SharedRun run;
    run.stack = stack;
    run.kernel = &k;
    run.d = &d;
    run.opt = &opt;
    run.total_groups = total;
    int nthreads = opt.os_threads;
    if (nthreads <= 0) {
        if (const char* e = std::getenv("FGEMU_THREADS")) nthreads = std::atoi(e);
        if (nthreads <= 0) nthreads = int(std::max(1u, std::thread::hardware_concurrency()));
    }
    nthreads = int(std::min<uint64_t>(uint64_t(nthreads), total));
    // Every fiber costs two memory mappings (stack and guard page): keep the dispatch well
    // inside the kernel's map limit however many OS threads are asked for (the result does
    // not depend on their number).
    const uint64_t tpg_threads = uint64_t(d.threads_per_threadgroup.x) *
                                 d.threads_per_threadgroup.y * d.threads_per_threadgroup.z;
    const uint64_t fiber_budget = max_map_count() / 4;
    nthreads = int(std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(nthreads), fiber_budget / (2 * tpg_threads))));
    run.keep_sets = size_t(nthreads);
    const Watchdog watchdog(opt.time_limit_s);
    std::vector<std::thread> pool;
    try {
        for (int i = 1; i < nthreads; ++i) pool.emplace_back([&run] { worker(run); });
    } catch (const std::system_error&) {
        // fewer OS threads than asked for: the groups are shared among those that started
    }
    worker(run);
    for (auto& t : pool) t.join();

    std::string error = run.error;
    if (opt.guard_buffers) {
        for (size_t i = 0; i < d.buffers.size(); ++i) {
            GuardedBuffer& gb = guarded[i];
            if (!gb.mem) continue;
#if defined(FGEMU_ASAN)
            ASAN_UNPOISON_MEMORY_REGION(gb.mem, kGuard);
            ASAN_UNPOISON_MEMORY_REGION(gb.data() + gb.size, kGuard);
#endif
            size_t before = 0, after = 0;
            for (size_t j = 0; j < kGuard; ++j) {
                if (gb.mem[j] != kCanary) before = std::max(before, kGuard - j);
                if (gb.data()[gb.size + j] != kCanary) after = j + 1;
            }
            if ((before || after) && error.empty())
                error = "out-of-bounds write: kernel " + std::string(k.name) + " wrote " +
                        (after ? std::to_string(after) + " byte(s) past the end"
                               : std::to_string(before) + " byte(s) before the start") +
                        " of buffer(" + std::to_string(i) + ") (" + std::to_string(gb.size) +
                        " bytes)";
            std::memcpy(d_in.buffers[i].ptr, gb.data(), gb.size);
            std::free(gb.mem);
        }
    }
    if (!error.empty()) throw Error(error);
    return !run.stopped;
}

}  // namespace fgemu
