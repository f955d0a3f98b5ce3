#include "threads.hpp"

#include "errors.hpp"
#include "interrupt.hpp"
#include <chrono>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() std::this_thread::yield()
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#define FASTGEMM_HAVE_ATFORK 1
#endif

namespace fastgemm {

namespace {

// A worker's stack: the kernels' frames are small, and the default 8 MiB per thread would
// let a large set_num_threads() exhaust a limited address space.
constexpr size_t kWorkerStackBytes = size_t(1) << 20;

// Whether the process may map another worker's stack and still leave room for what its
// threads allocate (packing workspaces, glibc's per-thread data: glibc aborts the
// process when it cannot allocate a thread's thread-local data, so running out must not
// happen). Under an address-space limit (ulimit -v) a quarter of it, at least 128 MiB,
// stays free; without a limit, always.
bool room_for_another_worker() {
#if defined(__linux__)
    struct rlimit lim;
    if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return true;
    const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    char buf[64] = {};
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return true;
    const double mapped = std::strtod(buf, nullptr) * double(sysconf(_SC_PAGESIZE));  // first field: VmSize
    const double limit = double(lim.rlim_cur);
    const double reserve = std::max(limit / 4, double(size_t(128) << 20));
    return mapped + double(kWorkerStackBytes) + reserve <= limit;
#else
    return true;
#endif
}

}  // namespace

int available_cores() {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
#endif
    unsigned n = std::thread::hardware_concurrency();
    return n ? int(n) : 1;
}

namespace {

int initial_threads() {
    // ASCII digits only, nothing around them: the same rule python/fastgemm/arguments.py
    // applies (and warns about), so both faces read one value the same way.
    if (const char* env = std::getenv("FASTGEMM_NUM_THREADS")) {
        long n = 0;
        const char* c = env;
        for (; *c >= '0' && *c <= '9' && n <= kMaxThreads; ++c) n = n * 10 + (*c - '0');
        if (c != env && *c == '\0' && n >= 1 && n <= kMaxThreads) return int(n);
    }
    return available_cores();
}

std::atomic<int>& thread_setting() {
    static std::atomic<int> n{initial_threads()};
    return n;
}

thread_local bool inside_parallel_region = false;

// The CPU the calling thread runs on, or -1 where the system does not say.
int current_cpu() {
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

// Moves the calling thread off `cpu` if it runs there and may run elsewhere. A worker
// woken from sleep can be queued on its waker's CPU even while another is idle: a VM's
// guest sees an idle, halted vCPU as busy (preempted), so the scheduler does not pick
// it, and the two threads then share one CPU for milliseconds (up to 54 ms measured for
// 512^3) until the load balancer parts them. Narrowing the affinity moves the thread at
// once; the old affinity is put back straight after, which does not move it back. An
// affinity someone else gives the worker meanwhile (taskset -a, os.sched_setaffinity on
// its thread id) is kept: the old one goes back only if the narrowed one is still in
// place. A change in the microsecond between reading the affinity and narrowing it is
// the one this can undo; without the move, benchmark ratios taken after a pause came out
// 2x low (18 of 390 rows) and 256^3 calls after a pause ran slower than on one thread.
void move_off_cpu(int cpu) {
#if defined(__linux__)
    if (cpu < 0 || sched_getcpu() != cpu) return;
    cpu_set_t allowed, now;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || !CPU_ISSET(cpu, &allowed) ||
        CPU_COUNT(&allowed) < 2)
        return;
    cpu_set_t elsewhere = allowed;
    CPU_CLR(cpu, &elsewhere);
    if (sched_setaffinity(0, sizeof elsewhere, &elsewhere) != 0) return;
    if (sched_getaffinity(0, sizeof now, &now) == 0 && CPU_EQUAL(&now, &elsewhere))
        sched_setaffinity(0, sizeof allowed, &allowed);
#else
    (void)cpu;
#endif
}

// Workers sleep on a condition variable between jobs. A job is a function and a task
// count; threads take task indices from an atomic counter, and the partition into
// tasks is fixed by the caller, so results do not depend on which thread ran a task.
//
// The caller never waits for a worker that has not started: once every task is taken it
// closes the job, and a worker that wakes after that finds it closed and leaves it. A
// sleeping worker's wake-up can take longer than the whole job: on a 2-vCPU VM the
// scheduler often queues the woken worker behind the caller on the caller's own vCPU,
// and a 128^3 call that waited for it took 260-460 us against 44 us on one thread.
//
// Fork: a child process has only the thread that called fork(), and the pool's mutexes
// may have been held by threads that are gone. So the child drops the old pool without
// touching it and starts an empty one (its workers are created on first use), as
// OpenBLAS and the OpenMP runtimes do.
class Pool {
public:
    static Pool& instance() {
        static std::atomic<Pool*>& current = install();
        return *current.load(std::memory_order_acquire);
    }

    // Returns false when another caller holds the pool (the caller then runs serially).
    bool run(int n_tasks, int n_threads, const std::function<void(int, int)>& fn) {
        std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
        if (!busy.owns_lock()) return false;
        n_threads = 1 + std::min(n_threads - 1, ensure_workers(n_threads - 1));
        {
            std::lock_guard<std::mutex> lock(m_);
            fn_ = &fn;
            watch_ = InterruptWatch::current();
            n_tasks_ = n_tasks;
            next_.store(0);
            active_workers_ = n_threads - 1;
            caller_cpu_.store(current_cpu(), std::memory_order_relaxed);
            open_.store(true);  // after the job's fields: a worker that sees it open sees them
            generation_.fetch_add(1);
        }
        const bool woke_sleepers = sleepers_.load() > 0;
        wake_.notify_all();
        // A woken worker may be queued on this CPU (see move_off_cpu): give it the CPU for
        // the moment it needs to move itself to an idle one.
        if (woke_sleepers) std::this_thread::yield();
        work();  // never throws: a task's exception is kept in error_
        // Every task is taken. Closing the job before reading inside_ (both sequentially
        // consistent) means a worker either counted itself in before this read, and is
        // waited for, or will find the job closed and never touch it.
        open_.store(false);
        spin_until([&] { return inside_.load() == 0; });
        std::unique_lock<std::mutex> lock(m_);
        done_.wait(lock, [&] { return inside_.load() == 0; });
        fn_ = nullptr;
        // No thread runs the job any more: its first exception, if any, is the caller's.
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
        return true;
    }

private:
    static std::atomic<Pool*>& install() {
        // Never destroyed: workers may outlive statics. The old pool of a forked child
        // is leaked on purpose (its threads do not exist there; its state is unknown).
        static std::atomic<Pool*> current{new Pool()};
#if defined(FASTGEMM_HAVE_ATFORK)
        pthread_atfork(nullptr, nullptr, [] { current.store(new Pool(), std::memory_order_release); });
#endif
        return current;
    }

    // Waking a sleeping thread costs 25-50 us on this VM (futex + vCPU halt/IPI), more
    // than a 128^3 SGEMM on two cores; so spin briefly before sleeping, as OpenBLAS
    // does, so back-to-back parallel regions find their workers awake.
    // The spinner yields now and then, so that a thread queued on its own core (a worker
    // the scheduler woke there) gets to run instead of waiting out the spin.
    // Returns whether `done` became true within the spin.
    template <class Pred>
    static bool spin_until(Pred done) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; !done(); ++i) {
            CPU_RELAX();
            if ((i & 255) == 255) {
                if (std::chrono::steady_clock::now() - start > std::chrono::microseconds(200)) return false;
                std::this_thread::yield();
            }
        }
        return true;
    }

    // Creates workers up to n; returns how many exist. A system that refuses more
    // threads (ulimit, memory) leaves the pool with the ones it has: the job runs on
    // fewer threads, with the same partition and results.
    int ensure_workers(int n) {
        while (workers_ < n && room_for_another_worker() && start_worker(workers_)) ++workers_;
        return workers_;
    }

    // A detached worker with a 1 MiB stack: the kernels' frames are small, and the
    // default 8 MiB per thread would let a large set_num_threads() exhaust a limited
    // address space (where glibc then aborts the process instead of failing the call).
    bool start_worker(int id) {
#if defined(FASTGEMM_HAVE_ATFORK)
        struct Start {
            Pool* pool;
            int id;
        };
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) != 0) return false;
        pthread_attr_setstacksize(&attr, kWorkerStackBytes);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        auto* start = new Start{this, id};
        pthread_t thread;
        const int rc = pthread_create(
            &thread, &attr,
            [](void* arg) -> void* {
                std::unique_ptr<Start> s(static_cast<Start*>(arg));
                s->pool->loop(s->id);
                return nullptr;
            },
            start);
        pthread_attr_destroy(&attr);
        if (rc != 0) delete start;
        return rc == 0;
#else
        try {
            std::thread([this, id] { loop(id); }).detach();
            return true;
        } catch (const std::system_error&) {
            return false;
        }
#endif
    }

    // Runs tasks until none is left. A task that throws (std::bad_alloc from a scratch
    // buffer, say) ends the job: no further task starts, the first exception is kept for
    // the caller to rethrow once every thread has left, and a worker's never escapes it.
    void work() {
        inside_parallel_region = true;
        AdoptInterruptWatch caller_watch(watch_);  // a worker stops for its caller's Ctrl-C
        for (int t = next_.fetch_add(1); t < n_tasks_; t = next_.fetch_add(1)) {
            try {
                (*fn_)(t, n_tasks_);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex_);
                if (!error_) error_ = std::current_exception();
                next_.store(n_tasks_);
            }
        }
        inside_parallel_region = false;
    }

    void loop(int id) {
        uint64_t seen = 0;
        for (;;) {
            const bool slept = !spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
            {
                std::unique_lock<std::mutex> lock(m_);
                if (slept) sleepers_.fetch_add(1);
                wake_.wait(lock, [&] { return generation_ != seen; });
                if (slept) sleepers_.fetch_sub(1);
                seen = generation_;
                if (id >= active_workers_) continue;  // not needed for this job
            }
            if (slept) move_off_cpu(caller_cpu_.load(std::memory_order_relaxed));
            inside_.fetch_add(1);
            // The open job may be a later one than the job this worker woke for: it takes
            // part only if that job asked for it (else a job could run on more threads
            // than set_num_threads allows).
            if (open_.load() && id < active_workers_) work();  // else the caller has taken every task and left
            if (inside_.fetch_sub(1) == 1) {
                std::lock_guard<std::mutex> lock(m_);
                done_.notify_one();
            }
        }
    }

    std::mutex busy_, m_;
    std::condition_variable wake_, done_;
    int workers_ = 0;  // detached threads started so far (they live for the process)
    const std::function<void(int, int)>* fn_ = nullptr;
    InterruptWatch watch_;  // the caller's: what the job's tasks stop for
    int n_tasks_ = 0, active_workers_ = 0;
    std::atomic<uint64_t> generation_{0};
    std::atomic<bool> open_{false};  // the job takes workers: set when posted, cleared once every task is taken
    std::atomic<int> inside_{0};     // workers that entered the job and have not left it
    std::atomic<int> sleepers_{0};     // workers asleep (or about to be) on wake_
    std::atomic<int> caller_cpu_{-1};  // where the job's caller ran when it posted the job
    std::mutex error_mutex_;
    std::exception_ptr error_;  // the job's first exception, rethrown by its caller
    std::atomic<int> next_{0};
};

}  // namespace

int get_num_threads() { return thread_setting().load(); }

void set_num_threads(int n) {
    if (n < 1 || n > kMaxThreads)
        throw ArgumentError("thread count must be between 1 and " + std::to_string(kMaxThreads) + ", got " +
                            std::to_string(n));
    thread_setting().store(n);
}

void parallel_for(int n_tasks, const std::function<void(int, int)>& fn) {
    if (n_tasks <= 0) return;
    int threads = std::min(get_num_threads(), n_tasks);
    if (threads <= 1 || inside_parallel_region || !Pool::instance().run(n_tasks, threads, fn)) {
        for (int t = 0; t < n_tasks; ++t) fn(t, n_tasks);
    }
}

}  // namespace fastgemm

// Plain C entry points, so tools that find thread pools by shared-library symbol
// (threadpoolctl's controller in python/fastgemm/_threadpoolctl.py) can reach them.
extern "C" int fastgemm_get_num_threads() { return fastgemm::get_num_threads(); }
extern "C" void fastgemm_set_num_threads(int n) {
    if (n >= 1) fastgemm::set_num_threads(std::min(n, fastgemm::kMaxThreads));
}
