// Threads: the one thread-count setting and the persistent pool that CPU kernels share.
//
// The count follows numpy users' conventions: FASTGEMM_NUM_THREADS at start-up,
// set_num_threads() at run time, default = the cores this process may use. The
// pool's workers live for the process, so a parallel region costs a wake-up, not
// thread creation; work is split statically, so a given thread count always gives
// the same partition and bit-identical results.
#pragma once

#include <cstdint>
#include <functional>

namespace fastgemm {

// The most threads fastgemm will use: far above any core count, low enough that a
// typo cannot ask the system for a hundred thousand threads.
constexpr int kMaxThreads = 1024;

int available_cores();
int get_num_threads();
void set_num_threads(int n);  // 1 <= n <= kMaxThreads, else std::invalid_argument

// Runs fn(task, n_tasks) for task in [0, n_tasks) on up to n_tasks pool threads
// (the caller is one of them), returning when all are done. Nested calls run serially.
void parallel_for(int n_tasks, const std::function<void(int task, int n_tasks)>& fn);

}  // namespace fastgemm
