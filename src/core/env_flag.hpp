// Boolean switches read from the environment, one rule for all of them (the Python
// package warns about values outside it by the same rule: python/fastgemm/arguments.py).
#pragma once

namespace fastgemm {

// `name` unset or empty: `fallback`. 0/off/false/no (any case): false; 1/on/true/yes:
// true; anything else: `fallback`.
bool env_flag(const char* name, bool fallback);

}  // namespace fastgemm
