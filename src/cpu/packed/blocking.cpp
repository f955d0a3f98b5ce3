// Cache sizes and block sizes (see blocking.hpp).
#include "cpu/packed/blocking.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace fastgemm {
namespace {

#if defined(__linux__)
// The first whitespace-separated word of a small sysfs file, or "" when it cannot be
// read. Plain POSIX reads, no iostreams: this runs while the registry is built, at the
// first call into the library, and must not depend on the C++ locale state of whatever
// process loaded it.
std::string sysfs_word(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    char buf[64];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return {};
    std::string word(buf, static_cast<size_t>(n));
    const size_t end = word.find_first_of(" \t\n");
    return end == std::string::npos ? word : word.substr(0, end);
}

// /sys/devices/system/cpu/cpu0/cache/indexN/{level,type,size}; size like "1024K".
int64_t sysfs_cache_size(int level, const char* kind) {
    for (int index = 0; index < 8; ++index) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
        const std::string l = sysfs_word(dir + "level"), t = sysfs_word(dir + "type"), s = sysfs_word(dir + "size");
        if (l.empty() || t.empty() || s.empty()) continue;
        if (std::atoi(l.c_str()) != level || (t != kind && t != "Unified")) continue;
        int64_t v = std::atoll(s.c_str());
        if (s.back() == 'K' || s.back() == 'k') v *= 1024;
        if (s.back() == 'M') v *= 1024 * 1024;
        return v;
    }
    return 0;
}
#endif

int64_t env_int(const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoll(v) : 0;
}

int64_t round_down(int64_t v, int64_t multiple) { return std::max(multiple, v / multiple * multiple); }

}  // namespace

CacheSizes detect_cache_sizes() {
    CacheSizes c;
    int64_t l1 = 0, l2 = 0, l3 = 0;
#if defined(__linux__)
    l1 = sysfs_cache_size(1, "Data");
    l2 = sysfs_cache_size(2, "Unified");
    l3 = sysfs_cache_size(3, "Unified");
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    // glibc's values; some hypervisors report per-socket L3 here, so sysfs comes first.
    if (l1 <= 0) l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    if (l2 <= 0) l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l3 <= 0) l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#elif defined(__APPLE__)
    auto get = [](const char* key) {
        int64_t v = 0;
        size_t len = sizeof(v);
        return sysctlbyname(key, &v, &len, nullptr, 0) == 0 ? v : int64_t(0);
    };
    // Performance cores (perflevel0) where the system has levels, else the generic keys.
    l1 = get("hw.perflevel0.l1dcachesize");
    if (l1 <= 0) l1 = get("hw.l1dcachesize");
    l2 = get("hw.perflevel0.l2cachesize");
    if (l2 <= 0) l2 = get("hw.l2cachesize");
    l3 = get("hw.l3cachesize");
#endif
    if (l1 > 0) c.l1d = l1;
    if (l2 > 0) c.l2 = l2;
    if (l3 > 0) c.l3 = l3;
    else c.l3 = std::max<int64_t>(c.l2 * 2, c.l3);  // no L3 (e.g. Apple): the L2 is the last level
    return c;
}

PackedConfig blocked_config(const MicroKernel* kernel, const CacheSizes& caches, int threads) {
    PackedConfig cfg;
    cfg.kernel = kernel;
    cfg.threads = std::max(1, threads);
    const int64_t mr = kernel->mr, nr = kernel->nr, f = sizeof(float);
    // kc: long enough that loading and storing the C tile (once per kc FMAs per
    // element) is noise. The B micro-panel (kc x NR) is reused by every tile of a row
    // block; give it 1/8 of L2 rather than half of L1, since L2 feeds L1 far faster
    // than one FMA pipe pair consumes a broadcast operand (Zen 4, measured: kc = 1024
    // beats kc = 128 by 15 % with the 12x32 kernel). Clamped to [128, 1024].
    cfg.kc = std::clamp<int64_t>(caches.l2 / 8 / (nr * f) / 64 * 64, 128, 1024);
    if (int64_t v = env_int("FASTGEMM_CPU_KC"); v > 0) cfg.kc = round_down(v, 8);
    // mc: the packed A block (mc x kc) takes 3/4 of L2, which leaves room for the B
    // micro-panel passing through.
    cfg.mc = round_down(caches.l2 * 3 / 4 / (cfg.kc * f), mr);
    if (int64_t v = env_int("FASTGEMM_CPU_MC"); v > 0) cfg.mc = round_down(v, mr);
    // nc: the packed B block (kc x nc) takes 1/8 of L3. It is written once per block
    // and reread for every mc rows; a smaller block stays in L3 while it is packed
    // (measured on Zen 4, 32 MiB L3: a 4 MiB block packs 2.5x faster than an 8 MiB
    // one, which decides short-wide shapes like 64 x 4096 x 4096).
    cfg.nc = round_down(caches.l3 / 8 / (cfg.kc * f), nr);
    if (int64_t v = env_int("FASTGEMM_CPU_NC"); v > 0) cfg.nc = round_down(v, nr);
    return cfg;
}

}  // namespace fastgemm
