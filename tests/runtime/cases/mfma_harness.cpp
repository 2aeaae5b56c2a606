// MFMA harness for tests/runtime/test_emu_mfma.py: one emulator launch of one wave per instruction.
//
// Compiled with -DCKGEN_CASES_INC="<file>" holding lines CKGEN_CASE(<builtin name>). For each case,
// lane l's A, B and C operands are read from a[l], b[l], c[l] (operand-sized, lane-major) and its D
// registers are written to d[l].
#include <string.h>

#include "ckgen/platform.h"

template <class F>
struct Sig;
template <class R, class A, class B, class C>
struct Sig<R (*)(A, B, C, int, int, int)> {
  using TA = A;
  using TB = B;
  using TC = C;
};

template <class T>
static T load_bytes(const unsigned char* p) {
  unsigned char raw[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) raw[i] = ckgen::gload(p + i);
  T v;
  memcpy(static_cast<void*>(&v), raw, sizeof(T));
  return v;
}

template <auto F>
static void mfma_case(const unsigned char* a, const unsigned char* b, const unsigned char* c, unsigned char* d) {
  using S = Sig<decltype(F)>;
  const int lane = ckgen::lane_id();
  auto av = load_bytes<typename S::TA>(a + lane * sizeof(typename S::TA));
  auto bv = load_bytes<typename S::TB>(b + lane * sizeof(typename S::TB));
  auto cv = load_bytes<typename S::TC>(c + lane * sizeof(typename S::TC));
  typename S::TC dv = F(av, bv, cv, 0, 0, 0);
  unsigned char raw[sizeof dv];
  memcpy(raw, static_cast<const void*>(&dv), sizeof dv);
  for (size_t i = 0; i < sizeof dv; ++i) ckgen::gstore(d + lane * sizeof dv + i, raw[i]);
}

#define CKGEN_CASE(NAME)                                                                                      \
  if (strcmp(name, #NAME) == 0) {                                                                             \
    using S = Sig<decltype(&NAME)>;                                                                           \
    sizes[0] = sizeof(S::TA);                                                                                 \
    sizes[1] = sizeof(S::TB);                                                                                 \
    sizes[2] = sizeof(S::TC);                                                                                 \
    if (!a) return 0;                                                                                         \
    return ckgen::emu::launch(#NAME, &mfma_case<&NAME>, ckgen::emu::Dim3{1, 1, 1}, 64, 0,                     \
                              static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b),     \
                              static_cast<const unsigned char*>(c), static_cast<unsigned char*>(d));          \
  }

// sizes[0..2] <- operand bytes per lane; with a == NULL only the sizes are returned. -1: unknown name.
extern "C" __attribute__((visibility("default"))) int run_case(const char* name, const void* a, const void* b,
                                                               const void* c, void* d, int* sizes) {
#include CKGEN_CASES_INC
  return -1;
}
