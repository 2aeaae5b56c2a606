// nv_map_cache.h (ckgen/include/ckgen/blocks): the tensor maps a host thread encoded last, so that a launch with
// the operands of a recent one (the same base address and geometry) copies its map instead of encoding it again
// (the Hopper bodies encode two to four maps on every launch: host time of each call). Plain C++17, no CUDA header:
// the map type is a parameter (CUtensorMap in nv_wgmma.h's encode_sw128; tests/include use their own).
//
//   MapKey::of(base, rank, dims, strides, box, elem_bytes)   every input of the encoder that varies from call to call
//                            (the rest of encode_sw128's are constants of its form); rank 1..5, dims[rank],
//                            strides[rank - 1] (bytes), box[rank]. Two keys are equal when every field is.
//   MapCache<Map, kN>        the kN keys put last with their maps (round robin): find(key, &map) copies a match's
//                            map and returns true; put(key, map) keeps it, replacing the oldest when full.
// A map holds nothing but its inputs' values (the address and the geometry), so a key that matches gives the map the
// encoder would return now, even when the memory was freed and allocated again at that address.
#pragma once

#include <cstdint>
#include <cstring>

namespace ckgen {
namespace nv {

struct MapKey {
  const void* base;
  std::uint64_t dims[5];
  std::uint64_t strides[4];
  std::uint32_t box[5];
  int rank;
  int elem_bytes;

  static MapKey of(const void* base, int rank, const std::uint64_t* dims, const std::uint64_t* strides,
                   const std::uint32_t* box, int elem_bytes) {
    MapKey k{};  // (the dims, strides and box past the rank stay 0: the arrays compare whole)
    k.base = base;
    k.rank = rank;
    k.elem_bytes = elem_bytes;
    const int n = rank < 1 ? 0 : rank > 5 ? 5 : rank;
    std::memcpy(k.dims, dims, sizeof(std::uint64_t) * n);
    if (n > 1) std::memcpy(k.strides, strides, sizeof(std::uint64_t) * (n - 1));
    std::memcpy(k.box, box, sizeof(std::uint32_t) * n);
    return k;
  }
  bool operator==(const MapKey& o) const {  // (field by field: a copy need not keep the struct's padding bytes)
    return base == o.base && rank == o.rank && elem_bytes == o.elem_bytes &&
           std::memcmp(dims, o.dims, sizeof dims) == 0 && std::memcmp(strides, o.strides, sizeof strides) == 0 &&
           std::memcmp(box, o.box, sizeof box) == 0;
  }
};

template <class Map, int kN>
struct MapCache {
  static_assert(kN >= 1, "MapCache keeps at least one map");
  MapKey keys[kN];
  Map maps[kN];
  int used = 0;  // entries filled
  int next = 0;  // the entry put() writes next (the oldest when full)

  bool find(const MapKey& key, Map* out) const {
    for (int i = 0; i < used; ++i) {
      if (keys[i] == key) {
        *out = maps[i];
        return true;
      }
    }
    return false;
  }
  void put(const MapKey& key, const Map& map) {
    keys[next] = key;
    maps[next] = map;
    next = next + 1 == kN ? 0 : next + 1;
    if (used < kN) ++used;
  }
};

}  // namespace nv
}  // namespace ckgen
