// fastcall.cpp (ckgen/backends/nvidia): the compiled prepared call of the cuda backend, built as a torch extension
// by ckgen/backends/nvidia/native.py.
//
// A Launcher is the base of a Python callable (ckgen's Kernel and DispatchKernel, derived from it by native.py ahead
// of their other bases, so that a call reaches launcher_call with no Python frame). It holds the callable's prepared
// signatures (a kernel's, or a family's members'), each recorded by ckgen.runtime.prepared after a fully checked
// first call (Launcher.add; the spec's layout is native.py's `spec`). A call looks for a signature that matches its
// arguments exactly: per operand None, or a torch.Tensor / nn.Parameter (not a subclass) on that CUDA device with
// that dtype, sizes, strides and data address mod 16; per keyword the same name in the same place and, for a
// scalar, the same type and value. The current device must be the operands'. On a match it checks that no written operand's bytes
// overlap another operand's (the same view where the ABI lets an output alias an input passes), allocates the
// outputs the caller left out (torch's caching allocator, on the current stream; 0xFF bytes when the spec asks
// for poison), takes the per-(device, stream) workspace, patches the addresses into the packed argument slots and
// calls the kernel's packed host entry ckgen_<kernel>_packed(slots, stream) (ckgen/host_api.h) on the current
// stream. It returns the outputs as the Python path does (the one output, or a tuple in ABI order). A nonzero
// status goes to the object's method _raise_status(status); a call that matches no signature, or whose overlap
// needs the full checks, to its _full_call(*args, **kwargs): the Python path, which checks everything and raises or
// runs as it does for a first call.
//
// The workspace: one zero-filled uint8 tensor per (device, stream), grown when a kernel needs more (every kernel
// leaves it zero-filled; a buffer outgrown stays alive, as a captured CUDA graph may still use it); dropped after
// a failed launch. native.py's workspace() hands the same buffers to the Python path.
#include <Python.h>

#include <ATen/cuda/EmptyTensor.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/SmallVector.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using EntryFn = int (*)(const int64_t* slots, void* stream);

PyTypeObject* g_tensor_types[4] = {nullptr, nullptr, nullptr, nullptr};  // exact types taken (set_tensor_types)

bool is_plain_tensor(PyObject* o) {
  for (PyTypeObject* t : g_tensor_types) {
    if (t != nullptr && Py_TYPE(o) == t) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------- the workspace
struct Workspace {
  int device;
  cudaStream_t stream;
  at::Tensor buffer;
};
std::vector<Workspace> g_workspaces;
std::vector<at::Tensor> g_outgrown;

// The zero-filled buffer of (device, stream), at least `bytes` long.
const at::Tensor& workspace_for(int device, cudaStream_t stream, int64_t bytes) {
  for (Workspace& w : g_workspaces) {
    if (w.device == device && w.stream == stream) {
      if (w.buffer.numel() < bytes) {
        g_outgrown.push_back(w.buffer);
        w.buffer = at::zeros({bytes}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device));
      }
      return w.buffer;
    }
  }
  const int64_t n = bytes > 1 ? bytes : 1;
  g_workspaces.push_back({device, stream, at::zeros({n}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device))});
  return g_workspaces.back().buffer;
}

// ---------------------------------------------------------------------------------------------- a signature
struct Operand {  // what a signature requires of one operand
  bool none = true;
  at::ScalarType dtype = at::kByte;
  int device = 0;
  int64_t align = 0;  // data address mod 16
  std::vector<int64_t> sizes, strides;
  int64_t span = 0;  // bytes from the first element to one past the last
};

struct Alloc {  // an output the caller left out
  int slot;
  std::vector<int64_t> sizes, strides;
  at::ScalarType dtype;
};

struct Check {  // a written operand and the operands it must not overlap
  int write;
  std::vector<std::pair<int, bool>> others;  // (operand, the same view is allowed)
};

struct Entry {
  EntryFn fn = nullptr;
  int device = 0;
  bool poison = false;
  Py_ssize_t npos = 0;
  PyObject* kwnames = nullptr;          // tuple of str (owned), or nullptr for none
  std::vector<PyObject*> kw_scalar;     // per keyword: the scalar's value (owned), or nullptr for an operand
  std::vector<Operand> operands;        // positional, then the keyword operands in keyword order
  std::vector<int64_t> slots;           // the packed arguments, addresses 0
  std::vector<std::pair<int, int>> fill;  // (slot, operand)
  std::vector<Alloc> allocs;
  std::vector<Check> checks;
  std::vector<int> ret;                 // the outputs returned: operand i >= 0, or allocation -1 - j
  int ws_slot = -1;
  int64_t ws_bytes = 0;
};

bool parse_sizes(PyObject* seq, std::vector<int64_t>& out) {
  PyObject* fast = PySequence_Fast(seq, "sizes and strides are sequences");
  if (fast == nullptr) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  out.resize(n);
  for (Py_ssize_t i = 0; i < n; ++i) out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
  Py_DECREF(fast);
  return !PyErr_Occurred();
}

bool parse_dtype(PyObject* o, at::ScalarType& out) {
  if (!THPDtype_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "expected a torch.dtype");
    return false;
  }
  out = reinterpret_cast<THPDtype*>(o)->scalar_type;
  return true;
}

// The spec tuple of native.py's spec() -> e (false with a Python exception set on a malformed spec).
bool parse_entry(PyObject* spec, Entry& e) {
  PyObject *fn, *kwnames, *kw, *operands, *slots, *fill, *allocs, *checks, *ret, *ws;
  int device, poison;
  Py_ssize_t npos;
  if (!PyArg_ParseTuple(spec, "OipnOOOOOOOOO", &fn, &device, &poison, &npos, &kwnames, &kw, &operands, &slots, &fill,
                        &allocs, &checks, &ret, &ws))
    return false;
  e.fn = reinterpret_cast<EntryFn>(PyLong_AsVoidPtr(fn));
  e.device = device;
  e.poison = poison != 0;
  e.npos = npos;
  if (PyTuple_GET_SIZE(kwnames) > 0) {
    Py_INCREF(kwnames);
    e.kwnames = kwnames;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kw); ++i) {
    PyObject* v = PyTuple_GET_ITEM(kw, i);  // the scalar's value, or None for an operand
    if (v == Py_None) {
      e.kw_scalar.push_back(nullptr);
    } else {
      Py_INCREF(v);
      e.kw_scalar.push_back(v);
    }
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(operands); ++i) {
    PyObject* o = PyTuple_GET_ITEM(operands, i);
    Operand op;
    if (o != Py_None) {
      PyObject *dt, *sz, *st;
      long long align, span;
      if (!PyArg_ParseTuple(o, "OOOiLL", &dt, &sz, &st, &op.device, &align, &span) || !parse_dtype(dt, op.dtype) ||
          !parse_sizes(sz, op.sizes) || !parse_sizes(st, op.strides))
        return false;
      op.none = false;
      op.align = align;
      op.span = span;
    }
    e.operands.push_back(std::move(op));
  }
  Py_buffer view;
  if (PyObject_GetBuffer(slots, &view, PyBUF_SIMPLE) != 0) return false;
  e.slots.resize(view.len / 8);
  std::memcpy(e.slots.data(), view.buf, e.slots.size() * 8);
  PyBuffer_Release(&view);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fill); ++i) {
    int slot, idx;
    if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fill, i), "ii", &slot, &idx)) return false;
    e.fill.emplace_back(slot, idx);
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(allocs); ++i) {
    PyObject *sz, *st, *dt;
    Alloc a;
    if (!PyArg_ParseTuple(PyTuple_GET_ITEM(allocs, i), "iOOO", &a.slot, &sz, &st, &dt) || !parse_sizes(sz, a.sizes) ||
        !parse_sizes(st, a.strides) || !parse_dtype(dt, a.dtype))
      return false;
    e.allocs.push_back(std::move(a));
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(checks); ++i) {
    PyObject* others;
    Check c;
    if (!PyArg_ParseTuple(PyTuple_GET_ITEM(checks, i), "iO", &c.write, &others)) return false;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(others); ++j) {
      int idx, same;
      if (!PyArg_ParseTuple(PyTuple_GET_ITEM(others, j), "ip", &idx, &same)) return false;
      c.others.emplace_back(idx, same != 0);
    }
    e.checks.push_back(std::move(c));
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ret); ++i) e.ret.push_back(static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(ret, i))));
  if (ws != Py_None) {
    long long bytes;
    if (!PyArg_ParseTuple(ws, "iL", &e.ws_slot, &bytes)) return false;
    e.ws_bytes = bytes;
  }
  return !PyErr_Occurred();
}

void release(Entry& e) {
  Py_XDECREF(e.kwnames);
  for (PyObject* v : e.kw_scalar) Py_XDECREF(v);
}

// Whether keyword names `kwnames` (a call's, may be null) are e's, in the same order.
bool same_keywords(const Entry& e, PyObject* kwnames) {
  const Py_ssize_t n = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  const Py_ssize_t m = e.kwnames ? PyTuple_GET_SIZE(e.kwnames) : 0;
  if (n != m) return false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* a = PyTuple_GET_ITEM(kwnames, i);
    PyObject* b = PyTuple_GET_ITEM(e.kwnames, i);
    if (a != b && PyUnicode_Compare(a, b) != 0) return false;
  }
  return true;
}

// Whether the object o meets operand spec op; its data address in *ptr.
bool operand_matches(const Operand& op, PyObject* o, uintptr_t* ptr) {
  if (op.none) {
    *ptr = 0;
    return o == Py_None;
  }
  if (!is_plain_tensor(o)) return false;
  const at::Tensor& t = THPVariable_Unpack(o);
  if (t.scalar_type() != op.dtype || !t.is_cuda() || t.get_device() != op.device) return false;
  if (!t.sizes().equals(op.sizes) || !t.strides().equals(op.strides))
    return false;
  *ptr = reinterpret_cast<uintptr_t>(t.data_ptr());
  return static_cast<int64_t>(*ptr & 15) == op.align;
}

// Whether a call (vectorcall arguments) matches e; the operands' addresses in ptrs.
bool matches(const Entry& e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, std::vector<uintptr_t>& ptrs) {
  if (nargs != e.npos || !same_keywords(e, kwnames)) return false;
  ptrs.resize(e.operands.size());
  size_t k = 0;
  for (Py_ssize_t i = 0; i < nargs; ++i, ++k) {
    if (!operand_matches(e.operands[k], args[i], &ptrs[k])) return false;
  }
  for (size_t i = 0; i < e.kw_scalar.size(); ++i) {
    PyObject* v = args[nargs + i];
    PyObject* want = e.kw_scalar[i];
    if (want != nullptr) {
      if (Py_TYPE(v) != Py_TYPE(want) || PyObject_RichCompareBool(v, want, Py_EQ) != 1) return false;
    } else {
      if (!operand_matches(e.operands[k], v, &ptrs[k])) return false;
      ++k;
    }
  }
  for (const Check& c : e.checks) {  // an interval test: any overlap goes to the full checks
    const uintptr_t wp = ptrs[c.write], wh = wp + e.operands[c.write].span;
    for (const auto& [oi, same_ok] : c.others) {
      const uintptr_t p = ptrs[oi];
      if (p < wh && wp < p + e.operands[oi].span && !(same_ok && p == wp)) return false;
    }
  }
  return true;
}

// Launches matching entry e; returns the outputs, the status as an int, or nullptr with an exception set.
PyObject* launch(const Entry& e, PyObject* const* args, Py_ssize_t nargs, const std::vector<uintptr_t>& ptrs) {
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(e.device)).stream();
  constexpr size_t kStackSlots = 64;
  int64_t stack[kStackSlots];
  std::vector<int64_t> heap;
  int64_t* slots = stack;
  if (e.slots.size() > kStackSlots) {
    heap.resize(e.slots.size());
    slots = heap.data();
  }
  std::memcpy(slots, e.slots.data(), e.slots.size() * 8);
  for (const auto& [slot, idx] : e.fill) slots[slot] = static_cast<int64_t>(ptrs[idx]);
  c10::SmallVector<at::Tensor, 4> outs;  // (no heap allocation for up to 4 outputs)
  for (const Alloc& a : e.allocs) {
    // torch's caching allocator, without the dispatcher's round trip of at::empty_strided (the same tensor)
    outs.emplace_back(at::detail::empty_strided_cuda(a.sizes, a.strides, a.dtype,
                                                     at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(e.device))));
    const at::Tensor& o = outs.back();
    if (e.poison && o.storage().nbytes() > 0) cudaMemsetAsync(o.storage().mutable_data(), 0xFF, o.storage().nbytes(), stream);
    slots[a.slot] = reinterpret_cast<int64_t>(o.data_ptr());
  }
  if (e.ws_slot >= 0) slots[e.ws_slot] = reinterpret_cast<int64_t>(workspace_for(e.device, stream, e.ws_bytes).data_ptr());
  const int status = e.fn(slots, stream);
  if (status != 0) {
    g_workspaces.clear();
    return PyLong_FromLong(status);
  }
  auto item = [&](int r) -> PyObject* {
    if (r < 0) return THPVariable_Wrap(outs[-1 - r]);
    // an operand given by the caller (positional, or the k-th keyword operand after them)
    size_t k = static_cast<size_t>(e.npos);
    if (r < e.npos) {
      Py_INCREF(args[r]);
      return args[r];
    }
    for (size_t i = 0; i < e.kw_scalar.size(); ++i) {
      if (e.kw_scalar[i] == nullptr && static_cast<int>(k++) == r) {
        Py_INCREF(args[nargs + i]);
        return args[nargs + i];
      }
    }
    PyErr_SetString(PyExc_RuntimeError, "ckgen fastcall: a returned operand is not among the call's");
    return nullptr;
  };
  if (e.ret.size() == 1) return item(e.ret[0]);
  PyObject* tup = PyTuple_New(static_cast<Py_ssize_t>(e.ret.size()));
  if (tup == nullptr) return nullptr;
  for (size_t i = 0; i < e.ret.size(); ++i) {
    PyObject* v = item(e.ret[i]);
    if (v == nullptr) {
      Py_DECREF(tup);
      return nullptr;
    }
    PyTuple_SET_ITEM(tup, static_cast<Py_ssize_t>(i), v);
  }
  return tup;
}

// ---------------------------------------------------------------------------------------------- the Launcher type
struct Launcher {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  std::vector<Entry>* entries;
  long long hits;
};

// The object's method `name` (an interned str) called with a call's vectorcall arguments.
PyObject* call_method(PyObject* self, PyObject* name, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  std::vector<PyObject*> stack(static_cast<size_t>(n) + 1);
  stack[0] = self;
  for (Py_ssize_t i = 0; i < n; ++i) stack[i + 1] = args[i];
  return PyObject_VectorcallMethod(name, stack.data(), static_cast<size_t>(nargs) + 1, kwnames);
}

PyObject* launcher_call(PyObject* self_, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<Launcher*>(self_);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  thread_local std::vector<uintptr_t> ptrs;
  for (const Entry& e : *self->entries) {
    if (!matches(e, args, nargs, kwnames, ptrs)) continue;
    if (c10::cuda::current_device() != e.device) break;  // the Python path switches devices
    ++self->hits;
    PyObject* out;
    try {
      out = launch(e, args, nargs, ptrs);
    } catch (const std::exception& ex) {
      PyErr_SetString(PyExc_RuntimeError, ex.what());
      return nullptr;
    }
    if (out != nullptr && PyLong_CheckExact(out)) {  // a nonzero status: the object raises its error
      PyObject* status = out;
      static PyObject* raise_status = PyUnicode_InternFromString("_raise_status");
      out = call_method(self_, raise_status, &status, 1, nullptr);
      Py_DECREF(status);
    }
    return out;
  }
  static PyObject* full_call = PyUnicode_InternFromString("_full_call");
  return call_method(self_, full_call, args, nargs, kwnames);
}

PyObject* launcher_new(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<Launcher*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->vectorcall = launcher_call;
  self->entries = new std::vector<Entry>();
  self->hits = 0;
  return reinterpret_cast<PyObject*>(self);
}

void launcher_clear_entries(Launcher* self) {
  for (Entry& e : *self->entries) release(e);
  self->entries->clear();
}

void launcher_dealloc(PyObject* self_) {
  auto* self = reinterpret_cast<Launcher*>(self_);
  launcher_clear_entries(self);
  delete self->entries;
  Py_TYPE(self_)->tp_free(self_);
}

PyObject* launcher_add(PyObject* self_, PyObject* spec) {
  auto* self = reinterpret_cast<Launcher*>(self_);
  Entry e;
  if (!PyTuple_Check(spec) || !parse_entry(spec, e)) {
    release(e);
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Launcher.add takes native.py's spec tuple");
    return nullptr;
  }
  self->entries->push_back(std::move(e));
  Py_RETURN_NONE;
}

PyObject* launcher_clear(PyObject* self_, PyObject*) {
  launcher_clear_entries(reinterpret_cast<Launcher*>(self_));
  Py_RETURN_NONE;
}

PyObject* launcher_size(PyObject* self_, void*) {
  return PyLong_FromSize_t(reinterpret_cast<Launcher*>(self_)->entries->size());
}

PyObject* launcher_hits(PyObject* self_, void*) { return PyLong_FromLongLong(reinterpret_cast<Launcher*>(self_)->hits); }

PyMethodDef launcher_methods[] = {
    {"add", launcher_add, METH_O, "add(spec): a prepared signature (native.py's spec)"},
    {"clear", launcher_clear, METH_NOARGS, "forget every signature"},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef launcher_getset[] = {
    {"size", launcher_size, nullptr, "the signatures held", nullptr},
    {"hits", launcher_hits, nullptr, "calls launched here", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

#ifdef Py_TPFLAGS_HAVE_VECTORCALL
constexpr unsigned long kVectorcallFlag = Py_TPFLAGS_HAVE_VECTORCALL;
#else
constexpr unsigned long kVectorcallFlag = _Py_TPFLAGS_HAVE_VECTORCALL;
#endif

// A base type only: a derived class provides _full_call and _raise_status (the header).
PyTypeObject LauncherType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "ckgen_fastcall.Launcher";
  t.tp_basicsize = sizeof(Launcher);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | kVectorcallFlag;
  t.tp_new = launcher_new;
  t.tp_dealloc = launcher_dealloc;
  t.tp_call = PyVectorcall_Call;
  t.tp_vectorcall_offset = offsetof(Launcher, vectorcall);
  t.tp_methods = launcher_methods;
  t.tp_getset = launcher_getset;
  t.tp_doc = "the prepared signatures of one ckgen callable (fastcall.cpp's header)";
  return t;
}();

// ---------------------------------------------------------------------------------------------- module functions
PyObject* set_tensor_types(PyObject*, PyObject* types) {
  if (!PyTuple_Check(types) || PyTuple_GET_SIZE(types) > 4) {
    PyErr_SetString(PyExc_TypeError, "set_tensor_types takes a tuple of at most 4 types");
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < 4; ++i) {
    PyObject* t = i < PyTuple_GET_SIZE(types) ? PyTuple_GET_ITEM(types, i) : nullptr;
    if (t != nullptr && !PyType_Check(t)) {
      PyErr_SetString(PyExc_TypeError, "set_tensor_types takes types");
      return nullptr;
    }
    Py_XINCREF(t);
    Py_XDECREF(reinterpret_cast<PyObject*>(g_tensor_types[i]));
    g_tensor_types[i] = reinterpret_cast<PyTypeObject*>(t);
  }
  Py_RETURN_NONE;
}

PyObject* workspace(PyObject*, PyObject* args) {
  int device;
  unsigned long long stream;
  long long bytes;
  if (!PyArg_ParseTuple(args, "iKL", &device, &stream, &bytes)) return nullptr;
  try {
    return THPVariable_Wrap(workspace_for(device, reinterpret_cast<cudaStream_t>(stream), bytes));
  } catch (const std::exception& ex) {
    PyErr_SetString(PyExc_RuntimeError, ex.what());
    return nullptr;
  }
}

PyObject* drop_workspaces(PyObject*, PyObject*) {
  g_workspaces.clear();
  Py_RETURN_NONE;
}

PyMethodDef module_methods[] = {
    {"set_tensor_types", set_tensor_types, METH_O, "the exact tensor types a signature takes (torch.Tensor, ...)"},
    {"workspace", workspace, METH_VARARGS, "workspace(device, stream, nbytes): the zero-filled scratch of a stream"},
    {"drop_workspaces", drop_workspaces, METH_NOARGS, "forget the workspaces (after a failed launch)"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

// The module's name is TORCH_EXTENSION_NAME (native.py names it after the source's hash).
#define CKGEN_CONCAT_(a, b) a##b
#define CKGEN_CONCAT(a, b) CKGEN_CONCAT_(a, b)
#define CKGEN_STR_(a) #a
#define CKGEN_STR(a) CKGEN_STR_(a)

PyMODINIT_FUNC CKGEN_CONCAT(PyInit_, TORCH_EXTENSION_NAME)(void) {
  static PyModuleDef def = {PyModuleDef_HEAD_INIT, CKGEN_STR(TORCH_EXTENSION_NAME), "ckgen's compiled prepared call",
                            -1, module_methods, nullptr, nullptr, nullptr, nullptr};
  if (PyType_Ready(&LauncherType) < 0) return nullptr;
  PyObject* m = PyModule_Create(&def);
  if (m == nullptr) return nullptr;
  Py_INCREF(&LauncherType);
  if (PyModule_AddObject(m, "Launcher", reinterpret_cast<PyObject*>(&LauncherType)) < 0) {
    Py_DECREF(&LauncherType);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
