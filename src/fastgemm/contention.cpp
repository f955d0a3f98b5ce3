#include "contention.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/threads.hpp"

#if defined(__linux__)
#include <dirent.h>
#endif

namespace fastgemm {

int other_runnable_threads() {
#if defined(__linux__)
    int running = -1, total = 0;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%*f %*f %*f %d/%d", &running, &total) != 2) running = -1;
        std::fclose(f);
    }
    if (running < 0) return -1;
    int own = 0;
    if (DIR* tasks = opendir("/proc/self/task")) {
        while (dirent* e = readdir(tasks)) {
            if (e->d_name[0] == '.') continue;
            std::string path = std::string("/proc/self/task/") + e->d_name + "/stat";
            if (FILE* f = std::fopen(path.c_str(), "r")) {
                char buf[512];
                size_t n = std::fread(buf, 1, sizeof buf - 1, f);
                std::fclose(f);
                buf[n] = '\0';
                // "tid (comm) S ...": the state follows the last ')' (comm may hold spaces).
                const char* close = std::strrchr(buf, ')');
                if (close && close[1] == ' ' && close[2] == 'R') ++own;
            }
        }
        closedir(tasks);
    }
    return std::max(running - own, 0);
#else
    return -1;
#endif
}

bool contended(int others, int threads) {
    return others > 0 && others + threads > available_cores();
}

}  // namespace fastgemm
