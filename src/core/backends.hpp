// One registration function per backend folder. registry.cpp calls those that were
// built (FASTGEMM_WITH_* are set by CMake); each adds its Backend and its kernels.
#pragma once

namespace fastgemm {

class Registry;

void register_cpu_backend(Registry& r);        // src/cpu
void register_metal_emu_backend(Registry& r);  // src/emu
void register_metal_backend(Registry& r);      // src/metal (Apple platforms)
void register_cuda_backend(Registry& r);       // src/cuda (when a CUDA toolkit is found)

}  // namespace fastgemm
