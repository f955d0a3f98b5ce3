// Contention: whether other work competes for the cores a CPU benchmark runs on.
//
// A competing load that lasts longer than a measurement slows the baseline and the
// kernel alike, so neither their spread nor the baseline checks (comparison.hpp) can
// see it, yet it changes their ratio whenever the two use different thread counts. So
// the comparison also asks the operating system, before and after each row, how many
// threads of other processes are runnable.
#pragma once

namespace fastgemm {

// Runnable threads of other processes at this instant: the system's running count
// (/proc/loadavg) minus this process's running threads (/proc/self/task). -1 where the
// operating system does not tell (anything but Linux).
int other_runnable_threads();

// True when `others` runnable threads and this process's `threads` do not fit on the
// usable cores together.
bool contended(int others, int threads);

}  // namespace fastgemm
