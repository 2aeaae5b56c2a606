// ckgen/platform.h: selects the platform layer that kernel bodies are written against.
//
//   __AMDGCN__ + __HIP_DEVICE_COMPILE__  device pass of `clang -x hip --offload-arch=gfx9xx -nogpuinc -nogpulib
//                       --offload-device-only`            -> platform_amd.h (the real code object)
//   CKGEN_PLATFORM_EMU  host clang++, no HIP               -> platform_emu.h (CPU emulation target)
//   __CUDACC__          nvcc                               -> platform_cuda.h (NVIDIA backend)
//
// (clang defines __AMDGCN__ in the HIP host pass too, as an aux-target macro; __HIP_DEVICE_COMPILE__
// tells the passes apart.) The host pass of a HIP compile is rejected: ckgen builds its device
// code with --offload-device-only, and its host libraries never include kernel bodies.
#pragma once

#if defined(CKGEN_PLATFORM_EMU)
#include "ckgen/platform_emu.h"
#elif defined(__HIP__) && defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN__)
#include "ckgen/platform_amd.h"
#elif defined(__CUDACC__)
#include "ckgen/platform_cuda.h"
#elif defined(__HIP__)
#error "ckgen: kernel headers are device-only. Compile HIP kernels with --offload-device-only (the host pass of a HIP compile has no platform); host code must include the generated C header instead."
#else
#error "ckgen: no platform selected. Define CKGEN_PLATFORM_EMU for the CPU emulator, or compile with clang -x hip --offload-arch=gfx9xx --offload-device-only (AMD) or nvcc (NVIDIA)."
#endif
