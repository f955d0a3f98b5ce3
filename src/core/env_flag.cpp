// See env_flag.hpp.
#include "core/env_flag.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace fastgemm {

bool env_flag(const char* name, bool fallback) {
    const char* env = std::getenv(name);
    if (!env || !*env) return fallback;
    std::string v(env);
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    if (v == "0" || v == "off" || v == "false" || v == "no") return false;
    if (v == "1" || v == "on" || v == "true" || v == "yes") return true;
    return fallback;
}

}  // namespace fastgemm
