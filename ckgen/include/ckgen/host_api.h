// ckgen/host_api.h: what every generated host library exports, on every platform (AMD, emu, CUDA).
//
//   CKGEN_API                      extern "C" with default visibility: marks the entry points. Libraries are
//                                  built with -fvisibility=hidden so several ckgen libraries in one process
//                                  never interpose each other's internals.
//   ckgen_status_string(status)    one line per status code of ckgen/status.h (weak: identical in every library).
//   ckgen_slot                     one argument of a packed host entry (below).
//
// Every kernel has, beside its host entry ckgen_<kernel>(<ABI arguments>, stream), the packed twin
// ckgen_<kernel>_packed(const ckgen_slot* args, void* stream): the same call with the ABI arguments in order, one 8-byte
// slot each (a pointer in .p, a size or stride in .i, an int32 scalar in .i32, a float scalar in .f; the last two
// in the slot's low bytes). A foreign-function call with two arguments costs a fraction of one with a dozen:
// ckgen's prepared calls (ckgen/runtime/prepared.py) launch through it.
#pragma once

#include <stdint.h>

#include "ckgen/status.h"

#define CKGEN_API extern "C" __attribute__((visibility("default")))

typedef union ckgen_slot {
  const void* p;
  int64_t i;
  int32_t i32;
  float f;
} ckgen_slot;

extern "C" __attribute__((visibility("default"), weak)) const char* ckgen_status_string(int status) {
  switch (status) {
    case CKGEN_SUCCESS: return "success";
    case CKGEN_ERROR_INVALID_VALUE: return "invalid argument value";
    case CKGEN_ERROR_NO_DEVICE: return "no GPU device: the runtime reports no usable device";
    case CKGEN_ERROR_NO_RUNTIME: return "no GPU runtime: the runtime library could not be loaded";
    case CKGEN_ERROR_UNSUPPORTED_ARCH: return "the device's architecture has no code object in this library";
    case CKGEN_ERROR_LAUNCH_FAILED: return "kernel module load or launch failed";
    case CKGEN_ERROR_EMULATION_FAULT: return "the emulator caught a fault";
    default: return "unknown ckgen status";
  }
}
