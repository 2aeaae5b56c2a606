/* ckgen/status.h: the status codes every ckgen entry point returns (docs/design.md, "Host side").
 *
 * Plain C, no dependencies; copied into each generated C header. 0 is success; every other value
 * is an error that ckgen_status_string() describes. Values are a stable ABI: never renumber.
 */
#ifndef CKGEN_STATUS_H
#define CKGEN_STATUS_H

#define CKGEN_SUCCESS 0
#define CKGEN_ERROR_INVALID_VALUE 1      /* a bad argument: null pointer, negative size, short stride */
#define CKGEN_ERROR_NO_DEVICE 2          /* the GPU runtime is present but reports no usable device */
#define CKGEN_ERROR_NO_RUNTIME 3         /* the GPU runtime library (libamdhip64) could not be loaded */
#define CKGEN_ERROR_UNSUPPORTED_ARCH 4   /* the device's architecture has no embedded code object */
#define CKGEN_ERROR_LAUNCH_FAILED 5      /* module load, function lookup or kernel launch failed */
#define CKGEN_ERROR_EMULATION_FAULT 6    /* the CPU emulator caught a fault (race, out of bounds) */

#endif /* CKGEN_STATUS_H */
