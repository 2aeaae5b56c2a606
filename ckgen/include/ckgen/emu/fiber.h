// ckgen/emu/fiber.h: cooperative fibers for the CPU emulator (one per emulated GPU thread).
//
// A fiber is a stack plus a saved stack pointer. switch_to(from, to) saves the callee-saved
// registers of the running fiber on its own stack, stores its stack pointer in *from, loads `to`
// and returns into it. On x86-64 this is ten instructions (no signal-mask syscall as with
// swapcontext); elsewhere ucontext is used.
//
// Stacks come from mmap with a PROT_NONE guard page below them, so a stack overflow is a clean
// SIGSEGV instead of silent corruption. Stacks are pooled process-wide and reused.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include <mutex>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace ckgen {
namespace emu {

constexpr size_t kFiberStackBytes = 128 * 1024;  // per emulated thread; kernels use a few KiB
constexpr size_t kGuardBytes = 4096;
// Stacks a library keeps for its next launch; the rest go back to the system. Each kept stack is two memory
// mappings (the guard page splits it) for as long as the library stays loaded, and a test process loads hundreds
// of emulator libraries: keeping every stack of every launch (a 256-thread workgroup on each OS thread) passed
// Linux's 65530 mappings per process in the test suite, after which mmap failed ("could not allocate fiber stacks")
// and new threads could not start.
constexpr size_t kStackPoolKeep = 64;

struct StackPool {
  std::mutex mu;
  std::vector<void*> free;
};
inline StackPool g_stack_pool;

// Returns the lowest usable address of a stack of kFiberStackBytes (guard page below), or nullptr.
inline void* stack_alloc() {
  {
    std::lock_guard<std::mutex> g(g_stack_pool.mu);
    if (!g_stack_pool.free.empty()) {
      void* s = g_stack_pool.free.back();
      g_stack_pool.free.pop_back();
      return s;
    }
  }
  void* p = mmap(nullptr, kFiberStackBytes + kGuardBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  mprotect(p, kGuardBytes, PROT_NONE);
  return static_cast<char*>(p) + kGuardBytes;
}

inline void stack_free(void* s) {
  {
    std::lock_guard<std::mutex> g(g_stack_pool.mu);
    if (g_stack_pool.free.size() < kStackPoolKeep) {
      g_stack_pool.free.push_back(s);
      return;
    }
  }
  munmap(static_cast<char*>(s) - kGuardBytes, kFiberStackBytes + kGuardBytes);
}

#if defined(__x86_64__)
}  // namespace emu
}  // namespace ckgen

// void ckgen_emu_swap_ctx(void** save_sp, void* load_sp). Weak: every translation unit that includes
// this header emits it and the linker keeps one. Hidden: never interposed, called without a PLT.
__asm__(
    ".text\n"
    ".weak ckgen_emu_swap_ctx\n"
    ".hidden ckgen_emu_swap_ctx\n"
    ".type ckgen_emu_swap_ctx,@function\n"
    "ckgen_emu_swap_ctx:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size ckgen_emu_swap_ctx, .-ckgen_emu_swap_ctx\n");

extern "C" __attribute__((visibility("hidden"))) void ckgen_emu_swap_ctx(void** save_sp, void* load_sp);

namespace ckgen {
namespace emu {

struct Context {
  void* sp = nullptr;
};

// Prepare ctx to start entry() on the stack [stack, stack + kFiberStackBytes). entry must never return.
inline void context_init(Context& ctx, void* stack, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + kFiberStackBytes) & ~static_cast<uintptr_t>(15);
  void** sp = reinterpret_cast<void**>(top);
  *--sp = nullptr;                               // fake return address of entry (keeps the ABI alignment)
  *--sp = reinterpret_cast<void*>(entry);        // `ret` of the first switch lands here
  for (int i = 0; i < 6; ++i) *--sp = nullptr;   // rbp rbx r12 r13 r14 r15
  ctx.sp = sp;
}

inline void context_switch(Context& from, Context& to) { ckgen_emu_swap_ctx(&from.sp, to.sp); }

#else  // portable fallback

struct Context {
  ucontext_t uc;
};

inline void context_init(Context& ctx, void* stack, void (*entry)()) {
  getcontext(&ctx.uc);
  ctx.uc.uc_stack.ss_sp = stack;
  ctx.uc.uc_stack.ss_size = kFiberStackBytes;
  ctx.uc.uc_link = nullptr;
  makecontext(&ctx.uc, entry, 0);
}

inline void context_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }

#endif

}  // namespace emu
}  // namespace ckgen
