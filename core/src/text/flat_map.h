#pragma once
// An open-addressing hash map (linear probing, backward-shift erase) for the printer's and
// parser's name tables. With a million values these lookups dominate; one probe into a
// flat array misses the cache far less than std::unordered_map's node chains.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace estuary::text {

template <typename K, typename V, typename Hash, typename Equal = std::equal_to<K>>
class FlatMap {
 public:
  explicit FlatMap(size_t expected = 16) { rehash(capacityFor(expected)); }

  size_t size() const { return size_; }

  V* find(const K& key) { return const_cast<V*>(std::as_const(*this).find(key)); }
  const V* find(const K& key) const {
    size_t slot = hash_(key) & mask_;
    while (slots_[slot].used) {
      if (equal_(slots_[slot].key, key)) return &slots_[slot].value;
      slot = (slot + 1) & mask_;
    }
    return nullptr;
  }

  // Inserts unless the key is present; returns the stored value and whether it is new.
  std::pair<V*, bool> tryEmplace(const K& key, V value) {
    if (2 * (size_ + 1) > slots_.size()) rehash(2 * slots_.size());
    size_t slot = hash_(key) & mask_;
    while (slots_[slot].used) {
      if (equal_(slots_[slot].key, key)) return {&slots_[slot].value, false};
      slot = (slot + 1) & mask_;
    }
    slots_[slot] = Slot{key, std::move(value), true};
    ++size_;
    return {&slots_[slot].value, true};
  }

  V& operator[](const K& key) { return *tryEmplace(key, V()).first; }

  void erase(const K& key) {
    size_t slot = hash_(key) & mask_;
    while (slots_[slot].used) {
      if (equal_(slots_[slot].key, key)) break;
      slot = (slot + 1) & mask_;
    }
    if (!slots_[slot].used) return;
    // Pull later entries of the probe run back into the hole so lookups still find them.
    size_t hole = slot;
    for (size_t next = (hole + 1) & mask_; slots_[next].used; next = (next + 1) & mask_) {
      size_t home = hash_(slots_[next].key) & mask_;
      if (((next - home) & mask_) >= ((next - hole) & mask_)) {
        slots_[hole] = std::move(slots_[next]);
        hole = next;
      }
    }
    slots_[hole].used = false;
    --size_;
  }

 private:
  struct Slot {
    K key{};
    V value{};
    bool used = false;
  };

  static size_t capacityFor(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    return capacity;
  }

  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot());
    mask_ = capacity - 1;
    size_ = 0;
    for (Slot& slot : old) {
      if (slot.used) tryEmplace(slot.key, std::move(slot.value));
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  Hash hash_;
  Equal equal_;
};

// Pointer hash that keeps neighbouring addresses in neighbouring slots: values allocated
// one after another are also looked up one after another, so probes stay in cache. The
// high bits are folded in so that addresses a power of two apart do not all collide.
struct PointerHash {
  size_t operator()(const void* pointer) const {
    auto bits = reinterpret_cast<uintptr_t>(pointer);
    return static_cast<size_t>((bits >> 4) ^ (bits >> 25) * 0x9e3779b97f4a7c15ull);
  }
};

}  // namespace estuary::text
