#include "cpu/bandwidth_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/threads.hpp"

#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace fastgemm {

int64_t last_level_cache_bytes() {
#if defined(__APPLE__)
    int64_t size = 0;
    size_t len = sizeof(size);
    for (const char* key : {"hw.l3cachesize", "hw.l2cachesize"}) {
        if (sysctlbyname(key, &size, &len, nullptr, 0) == 0 && size > 0) return size;
    }
    return 0;
#else
    int64_t best = 0;
    for (int index = 0; index < 8; ++index) {
        std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
        std::string text;
        if (!(f >> text)) break;
        int64_t v = std::stoll(text);
        if (text.back() == 'K') v *= 1024;
        if (text.back() == 'M') v *= 1024 * 1024;
        best = std::max(best, v);
    }
    return best;
#endif
}

double measure_copy_bandwidth_gbs(int threads, int64_t bytes) {
    if (threads <= 0) threads = get_num_threads();
    if (bytes <= 0) bytes = std::max<int64_t>(8 * last_level_cache_bytes(), int64_t(256) << 20);
    const size_t n = size_t(bytes / 4);
    std::vector<float> src(n, 1.0f), dst(n, 0.0f);  // written once: pages are resident
    const int saved = get_num_threads();
    set_num_threads(threads);
    double best = 0.0;
    for (int pass = 0; pass < 4; ++pass) {
        auto t0 = std::chrono::steady_clock::now();
        parallel_for(threads, [&](int t, int parts) {
            size_t begin = n * size_t(t) / size_t(parts), end = n * size_t(t + 1) / size_t(parts);
            std::memcpy(dst.data() + begin, src.data() + begin, (end - begin) * sizeof(float));
        });
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (pass > 0) best = std::max(best, 2.0 * double(n) * 4.0 / s * 1e-9);
    }
    set_num_threads(saved);
    return best;
}

}  // namespace fastgemm
