// ckgen/host_runtime.h: the host side of a generated AMD library (plain C++17, no HIP headers).
//
// A generated library is ONE host translation unit (the lead's launcher source) that includes this
// header once, linked with the embed file generated from templates/embed_amd.s.j2. It finds the HIP
// runtime with dlopen at run time, so the library builds with any clang and loads on any machine.
//
// ---------------------------------------------------------------------------------------------------
// API (stable; launchers call only this):
//
//   struct ckgen_code_object { const char* arch; const unsigned char* data; size_t size; };
//       One device code object (an AMDGPU ELF, code object v4) per arch, e.g. arch = "gfx942".
//       The embed file defines the table (hidden symbols, one table per library):
//           extern "C" const ckgen_code_object ckgen_code_objects[];
//           extern "C" const size_t ckgen_code_object_count;
//
//   [[maybe_unused]] int ckgen_rt_launch(const char* kernel, const unsigned grid[3], const unsigned block[3],
//                       unsigned lds_bytes, void* stream, void** args);
//       Launches the kernel symbol `kernel` (the extern "C" name in the code object) on the current
//       HIP device with hipModuleLaunchKernel(grid, block, dynamic LDS bytes, stream, kernelParams =
//       args). `args` holds one pointer per kernel argument, pointing at the argument's value, in the
//       kernel's parameter order. `stream` is a hipStream_t or NULL (the null stream).
//       Returns CKGEN_SUCCESS, CKGEN_ERROR_NO_RUNTIME (no loadable libamdhip64),
//       CKGEN_ERROR_NO_DEVICE (runtime present, no device: hipInit/hipGetDevice fail),
//       CKGEN_ERROR_UNSUPPORTED_ARCH (no code object for the device's gcnArchName),
//       CKGEN_ERROR_LAUNCH_FAILED (hipModuleLoadData / hipModuleGetFunction / launch failed) or
//       CKGEN_ERROR_INVALID_VALUE (null kernel, grid, block or args). Never aborts, never prints.
//
//   int ckgen_rt_status(void);
//       Initialises as ckgen_rt_launch does (runtime, device, code object for the current device) and
//       returns the status a launch would get before the launch itself. Lets launchers and tests
//       probe the runtime without a kernel.
//
//   CKGEN_LAUNCH(kernel_name, grid_x, grid_y, grid_z, block_threads, lds_bytes, stream, arg0, arg1, ...)
//       The platform-neutral launch macro of docs/design.md: an int status expression that packs
//       &arg_i into a void*[] and calls ckgen_rt_launch("kernel_name", {gx, gy, gz},
//       {block_threads, 1, 1}, lds_bytes, stream, args). Each arg must have exactly the type of the
//       kernel's parameter (the values are passed by address, as hipModuleLaunchKernel wants).
//
//   From ckgen/host_api.h (included here): CKGEN_API (mark exported entry points) and
//   const char* ckgen_status_string(int status) (exported, weak, one line per status code).
//
// Behaviour:
//   - libamdhip64 is looked up, in order, at $CKGEN_HIP_LIBRARY if that environment variable is set
//     (then only there; read here, in C, because the library has no Python), else each name of
//     CKGEN_HIP_LIBRARY_NAMES (default: libamdhip64.so, libamdhip64.so.6, libamdhip64.so.5). The
//     lookup and hipInit happen once per process (thread-safe, on first use).
//   - The device's arch comes from hipGetDeviceProperties(R0600)' gcnArchName, with feature suffixes
//     (":sramecc+:xnack-") stripped. hipDeviceProp_t's layout differs between ROCm releases and this
//     header carries no HIP headers, so the properties are read into an oversized zeroed buffer and
//     gcnArchName is the first NUL-delimited string of the form gfx<hex digits>[:features].
//   - Each HIP device gets its module once (hipModuleLoadData of the matching code object, lazily,
//     under a mutex); hipModuleGetFunction results are cached per device and kernel name.
//   - Everything here except ckgen_status_string has internal linkage, so several ckgen libraries
//     loaded into one process never share state or code objects.
// ---------------------------------------------------------------------------------------------------
#pragma once

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ckgen/host_api.h"  // CKGEN_API, ckgen_status_string
#include "ckgen/status.h"


#ifndef CKGEN_HIP_LIBRARY_NAMES
#define CKGEN_HIP_LIBRARY_NAMES "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"
#endif

struct ckgen_code_object {
  const char* arch;
  const unsigned char* data;
  size_t size;
};

extern "C" const ckgen_code_object ckgen_code_objects[];
extern "C" const size_t ckgen_code_object_count;


namespace {

// The few HIP entry points used, by C signature (hipError_t is an int-sized enum; handles are pointers).
using ckgen_hip_init_t = int (*)(unsigned);
using ckgen_hip_get_device_t = int (*)(int*);
using ckgen_hip_get_device_count_t = int (*)(int*);
using ckgen_hip_get_props_t = int (*)(void*, int);
using ckgen_hip_module_load_data_t = int (*)(void**, const void*);
using ckgen_hip_module_get_function_t = int (*)(void**, void*, const char*);
using ckgen_hip_module_launch_t = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                          unsigned, void*, void**, void**);

struct ckgen_rt_api {
  int status = CKGEN_ERROR_NO_RUNTIME;
  void* lib = nullptr;
  ckgen_hip_init_t init = nullptr;
  ckgen_hip_get_device_t get_device = nullptr;
  ckgen_hip_get_device_count_t get_device_count = nullptr;
  ckgen_hip_get_props_t get_props = nullptr;
  ckgen_hip_module_load_data_t module_load_data = nullptr;
  ckgen_hip_module_get_function_t module_get_function = nullptr;
  ckgen_hip_module_launch_t module_launch = nullptr;
};

template <class F>
bool ckgen_rt_sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

ckgen_rt_api ckgen_rt_api_load() {
  ckgen_rt_api api;
  const char* forced = getenv("CKGEN_HIP_LIBRARY");
  if (forced != nullptr && forced[0] != '\0') {
    api.lib = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
  } else {
    static const char* const names[] = {CKGEN_HIP_LIBRARY_NAMES};
    for (const char* name : names) {
      api.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (api.lib != nullptr) break;
    }
  }
  if (api.lib == nullptr) return api;  // CKGEN_ERROR_NO_RUNTIME
  bool ok = ckgen_rt_sym(api.lib, "hipInit", &api.init) &&
            ckgen_rt_sym(api.lib, "hipGetDevice", &api.get_device) &&
            ckgen_rt_sym(api.lib, "hipGetDeviceCount", &api.get_device_count) &&
            ckgen_rt_sym(api.lib, "hipModuleLoadData", &api.module_load_data) &&
            ckgen_rt_sym(api.lib, "hipModuleGetFunction", &api.module_get_function) &&
            ckgen_rt_sym(api.lib, "hipModuleLaunchKernel", &api.module_launch);
  // ROCm 6 renamed the current-layout query; either fills a buffer that we scan (see the top).
  if (!ckgen_rt_sym(api.lib, "hipGetDevicePropertiesR0600", &api.get_props)) {
    ok = ok && ckgen_rt_sym(api.lib, "hipGetDeviceProperties", &api.get_props);
  }
  if (!ok) return api;  // a library without the module API is no usable runtime
  // The runtime loaded: from here on, any failure to bring up a device is "no device".
  int count = 0;
  if (api.init(0) != 0 || api.get_device_count(&count) != 0 || count <= 0) {
    api.status = CKGEN_ERROR_NO_DEVICE;
    return api;
  }
  api.status = CKGEN_SUCCESS;
  return api;
}

const ckgen_rt_api& ckgen_rt_api_get() {
  static const ckgen_rt_api api = ckgen_rt_api_load();  // C++11: initialised once, thread-safe
  return api;
}

bool ckgen_rt_is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Finds "gfx<hex>[:features]" as a NUL-delimited string in the properties buffer; writes the bare arch.
bool ckgen_rt_find_arch(const unsigned char* buf, size_t n, std::string* arch) {
  for (size_t i = 0; i + 4 < n; ++i) {
    if ((i > 0 && buf[i - 1] != 0) || buf[i] != 'g' || buf[i + 1] != 'f' || buf[i + 2] != 'x') continue;
    size_t j = i + 3;
    while (j < n && ckgen_rt_is_hex(static_cast<char>(buf[j]))) ++j;
    if (j - (i + 3) < 3 || j >= n || (buf[j] != 0 && buf[j] != ':')) continue;
    size_t end = j;
    while (end < n && buf[end] != 0) ++end;
    if (end >= n) continue;
    arch->assign(reinterpret_cast<const char*>(buf + i), j - i);
    return true;
  }
  return false;
}

struct ckgen_rt_device {
  int status = CKGEN_ERROR_LAUNCH_FAILED;
  void* module = nullptr;
  std::unordered_map<std::string, void*> functions;
};

std::mutex& ckgen_rt_mutex() {
  static std::mutex m;
  return m;
}

// The state of the current device (created and its module loaded on first use); mutex held by caller.
ckgen_rt_device* ckgen_rt_device_locked(const ckgen_rt_api& api, int device) {
  static std::map<int, std::unique_ptr<ckgen_rt_device>> devices;
  std::unique_ptr<ckgen_rt_device>& slot = devices[device];
  if (slot) return slot.get();
  slot.reset(new ckgen_rt_device());
  ckgen_rt_device* d = slot.get();
  std::vector<unsigned char> props(size_t(1) << 16, 0);
  std::string arch;
  if (api.get_props(props.data(), device) != 0) {
    d->status = CKGEN_ERROR_NO_DEVICE;
    return d;
  }
  if (!ckgen_rt_find_arch(props.data(), props.size(), &arch)) {
    d->status = CKGEN_ERROR_UNSUPPORTED_ARCH;
    return d;
  }
  const ckgen_code_object* co = nullptr;
  for (size_t i = 0; i < ckgen_code_object_count; ++i) {
    if (arch == ckgen_code_objects[i].arch) co = &ckgen_code_objects[i];
  }
  if (co == nullptr) {
    d->status = CKGEN_ERROR_UNSUPPORTED_ARCH;
    return d;
  }
  d->status = api.module_load_data(&d->module, co->data) == 0 ? CKGEN_SUCCESS : CKGEN_ERROR_LAUNCH_FAILED;
  return d;
}

// Status of the current device; on success *out is its state (used under the mutex only).
int ckgen_rt_current(ckgen_rt_device** out, const ckgen_rt_api** api_out) {
  const ckgen_rt_api& api = ckgen_rt_api_get();
  *api_out = &api;
  if (api.status != CKGEN_SUCCESS) return api.status;
  int device = -1;
  if (api.get_device(&device) != 0 || device < 0) return CKGEN_ERROR_NO_DEVICE;
  *out = ckgen_rt_device_locked(api, device);
  return (*out)->status;
}

[[maybe_unused]] int ckgen_rt_status(void) {
  std::lock_guard<std::mutex> lock(ckgen_rt_mutex());
  ckgen_rt_device* d = nullptr;
  const ckgen_rt_api* api = nullptr;
  return ckgen_rt_current(&d, &api);
}

[[maybe_unused]] int ckgen_rt_launch(const char* kernel, const unsigned grid[3], const unsigned block[3],
                                     unsigned lds_bytes, void* stream, void** args) {
  if (kernel == nullptr || grid == nullptr || block == nullptr || args == nullptr) {
    return CKGEN_ERROR_INVALID_VALUE;
  }
  void* function = nullptr;
  const ckgen_rt_api* api = nullptr;
  {
    std::lock_guard<std::mutex> lock(ckgen_rt_mutex());
    ckgen_rt_device* d = nullptr;
    int status = ckgen_rt_current(&d, &api);
    if (status != CKGEN_SUCCESS) return status;
    auto it = d->functions.find(kernel);
    if (it == d->functions.end()) {
      if (api->module_get_function(&function, d->module, kernel) != 0 || function == nullptr) {
        return CKGEN_ERROR_LAUNCH_FAILED;
      }
      d->functions.emplace(kernel, function);
    } else {
      function = it->second;
    }
  }
  int rc = api->module_launch(function, grid[0], grid[1], grid[2], block[0], block[1], block[2], lds_bytes,
                              stream, args, nullptr);
  return rc == 0 ? CKGEN_SUCCESS : CKGEN_ERROR_LAUNCH_FAILED;
}

// CKGEN_LAUNCH's body: args are bound by const reference, so temporaries live through the call.
template <class... Args>
int ckgen_rt_launch_args(const char* kernel, unsigned gx, unsigned gy, unsigned gz, unsigned threads,
                         unsigned lds_bytes, void* stream, const Args&... args) {
  void* ptrs[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
  const unsigned grid[3] = {gx, gy, gz};
  const unsigned block[3] = {threads, 1u, 1u};
  return ckgen_rt_launch(kernel, grid, block, lds_bytes, stream, ptrs);
}

}  // namespace

#define CKGEN_LAUNCH(kernel_name, gx, gy, gz, block_threads, lds_bytes, stream, ...) \
  ckgen_rt_launch_args(#kernel_name, (gx), (gy), (gz), (block_threads), (lds_bytes), (stream), __VA_ARGS__)
// (no programmatic dependent launch on AMD: launches stay in stream order)
#define CKGEN_LAUNCH_DEPENDENT(kernel_name, ...) CKGEN_LAUNCH(kernel_name, __VA_ARGS__)
