// The machine description (cgc/machine.h): each target's machine, the cache
// and core columns of its row of cgc/targets.def, and the machine cgc or a
// model runs on: its caches from sysfs, else from CPUID's cache parameters,
// else (a virtual machine may hide both) the "native" row; its cores from
// the CPU affinity.
#include "cgc/machine.h"

#include <fstream>
#include <sstream>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#ifdef __linux__
#include <sched.h>
#endif

namespace cgc::rt {
namespace {

struct MachineRow {
  const char* name;
  int64_t l1dKib, l2Kib, l3Kib;
  int l3SharedBy, cores;
};

constexpr MachineRow kMachines[] = {
#define CGC_TARGET(name, arch, flags, tier, lanes, xsmm, l1d, l2, l3, shared, cores) \
  {name, l1d, l2, l3, shared, cores},
#include "cgc/targets.def"
#undef CGC_TARGET
};

/// The first line of `path`, or "".
std::string readLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

/// sysfs's "48K", "1024K", "32M" in bytes; 0 if unreadable.
int64_t parseSize(const std::string& text) {
  size_t end = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &end);
  } catch (...) {
    return 0;
  }
  const char unit = end < text.size() ? text[end] : ' ';
  if (unit == 'K') return value << 10;
  if (unit == 'M') return value << 20;
  if (unit == 'G') return value << 30;
  return value;
}

/// CPUs in a list such as "0-15,128-143" or "3"; 0 if unreadable.
int countCpus(const std::string& list) {
  int count = 0;
  std::stringstream ranges(list);
  std::string range;
  while (std::getline(ranges, range, ',')) {
    int lo = 0, hi = 0;
    char dash = 0;
    std::stringstream in(range);
    if (!(in >> lo)) return 0;
    if (!(in >> dash >> hi) || dash != '-') hi = lo;
    count += hi - lo + 1;
  }
  return count;
}

bool anyCache(const MachineInfo& m) { return m.l1dBytes || m.l2Bytes || m.l3Bytes; }

/// Records one cache (level, data or unified, bytes, CPUs sharing it).
void record(MachineInfo& m, int level, bool data, int64_t bytes, int sharedBy) {
  if (level == 1 && data) m.l1dBytes = bytes;
  if (level == 2) m.l2Bytes = bytes;
  if (level == 3) {
    m.l3Bytes = bytes;
    m.l3SharedBy = sharedBy;
  }
}

int affinityCores() {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
#endif
  return 0;
}

}  // namespace

std::optional<MachineInfo> machineOfTarget(const std::string& name, int vectorBits) {
  for (const MachineRow& row : kMachines)
    if (name == row.name)
      return MachineInfo{vectorBits,      row.l1dKib << 10, row.l2Kib << 10,
                         row.l3Kib << 10, row.l3SharedBy,   row.cores};
  return std::nullopt;
}

MachineInfo readSysfsCaches(const std::string& root) {
  MachineInfo m;
  const std::string dir = root + "/devices/system/cpu/cpu0/cache/index";
  for (int index = 0; index < 16; ++index) {
    const std::string at = dir + std::to_string(index) + "/";
    const std::string level = readLine(at + "level"), type = readLine(at + "type");
    if (level.empty()) continue;  // indices need not be dense
    if (type == "Instruction") continue;
    record(m, level[0] - '0', type == "Data", parseSize(readLine(at + "size")),
           countCpus(readLine(at + "shared_cpu_list")));
  }
  return m;
}

MachineInfo readCpuidCaches(Cpuid cpuid) {
#if defined(__x86_64__) || defined(__i386__)
  if (!cpuid)
    cpuid = [](uint32_t leaf, uint32_t sub, uint32_t(&r)[4]) {
      const uint32_t max = __get_cpuid_max(leaf & 0x80000000u, nullptr);
      if (max < leaf) {
        r[0] = r[1] = r[2] = r[3] = 0;
        return;
      }
      __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
    };
#endif
  MachineInfo m;
  if (!cpuid) return m;
  // Leaf 4 (Intel) and 0x8000001D (AMD) share a layout: a cache a subleaf,
  // type 0 ending the list.
  for (uint32_t leaf : {4u, 0x8000001Du}) {
    for (uint32_t sub = 0; sub < 16; ++sub) {
      uint32_t r[4];
      cpuid(leaf, sub, r);
      const uint32_t type = r[0] & 31;  // 1 data, 2 instruction, 3 unified
      if (type == 0) break;
      if (type == 2) continue;
      const int level = static_cast<int>(r[0] >> 5 & 7);
      const int sharedBy = static_cast<int>((r[0] >> 14 & 0xfff) + 1);
      const int64_t ways = (r[1] >> 22) + 1, partitions = (r[1] >> 12 & 0x3ff) + 1;
      const int64_t line = (r[1] & 0xfff) + 1, sets = int64_t{r[2]} + 1;
      record(m, level, type == 1, ways * partitions * line * sets, sharedBy);
    }
    if (m.l1dBytes || m.l2Bytes || m.l3Bytes) break;
  }
  return m;
}

MachineInfo hostMachine(int vectorBits) {
  static const MachineInfo caches = [] {
    const MachineInfo typical = *machineOfTarget("native", 0);
    MachineInfo m = readSysfsCaches("/sys");
    if (!anyCache(m)) m = readCpuidCaches();
    if (!anyCache(m)) m = typical;
    // A machine that reports caches but no L3 has none.
    if (m.l1dBytes == 0) m.l1dBytes = typical.l1dBytes;
    if (m.l2Bytes == 0) m.l2Bytes = typical.l2Bytes;
    if (m.l3Bytes > 0 && m.l3SharedBy == 0) m.l3SharedBy = typical.l3SharedBy;
    m.cores = affinityCores();
    if (m.cores == 0) m.cores = typical.cores;
    return m;
  }();
  MachineInfo m = caches;
  m.vectorBits = vectorBits;
  return m;
}

std::string describeMachine(const MachineInfo& m) {
  auto size = [](int64_t bytes) {
    return bytes >= (1 << 20) && bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                                        : std::to_string(bytes >> 10) + " KiB";
  };
  std::string text = size(m.l1dBytes) + " L1d, " + size(m.l2Bytes) + " L2, ";
  text += m.l3Bytes ? size(m.l3Bytes) + " L3 / " + std::to_string(m.l3SharedBy) + " CPUs, "
                    : std::string("no L3, ");
  return text + std::to_string(m.cores) + " cores, " + std::to_string(m.vectorBits) +
         "-bit vectors";
}

}  // namespace cgc::rt
