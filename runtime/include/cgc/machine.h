// The machine description: what the kernels' choices weigh of the machine
// that runs a model (its vector width, caches and cores), so that
// thresholds measured on one machine scale to another instead of being
// constants. The compiler describes its target with it (the cache and core
// columns of a named target's row of cgc/targets.def, or for native the
// machine cgc runs on), the pack-conv-weights pass chooses with it
// (ConvContext), and the runtime describes the machine it runs on where it
// chooses itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cgc::rt {

struct MachineInfo {
  int vectorBits = 0;    // the widest float vector register
  int64_t l1dBytes = 0;  // L1 data cache, per core
  int64_t l2Bytes = 0;   // L2 as one core has it
  int64_t l3Bytes = 0;   // one L3 (0: none)
  int l3SharedBy = 0;    // CPUs sharing that L3
  int cores = 0;         // CPUs a model runs on

  int lanes() const { return vectorBits / 32; }
  /// The largest cache: the L3, or the L2 where there is none.
  int64_t lastLevelBytes() const { return l3Bytes > 0 ? l3Bytes : l2Bytes; }
  bool operator==(const MachineInfo&) const = default;
};

/// The caches and cores of target `name`'s row of cgc/targets.def, with
/// `vectorBits` (the row's lanes); nothing for a name without a row.
std::optional<MachineInfo> machineOfTarget(const std::string& name, int vectorBits);

/// What sysfs says of cpu0's caches under `root` ("/sys" on Linux:
/// devices/system/cpu/cpu0/cache/index*/{level,type,size,shared_cpu_list});
/// 0 in the fields it does not give.
MachineInfo readSysfsCaches(const std::string& root);

/// CPUID: (leaf, subleaf) -> eax, ebx, ecx, edx.
using Cpuid = void (*)(uint32_t leaf, uint32_t subleaf, uint32_t (&regs)[4]);

/// The caches that CPUID's deterministic cache parameters give (leaf 4 on
/// Intel, 0x8000001D on AMD); 0 where it has none. `cpuid` null: this
/// CPU's (none off x86).
MachineInfo readCpuidCaches(Cpuid cpuid = nullptr);

/// The machine this process runs on, with `vectorBits`: caches from sysfs,
/// else CPUID, else the "native" row of cgc/targets.def; cores from the
/// process's CPU affinity. Read once.
MachineInfo hostMachine(int vectorBits);

/// "32 KiB L1d, 1 MiB L2, 32 MiB L3 / 8 CPUs, 2 cores, 512-bit vectors".
std::string describeMachine(const MachineInfo& m);

}  // namespace cgc::rt
