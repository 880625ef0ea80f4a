// The machine description (cgc/machine.h): sysfs and CPUID read from fake
// trees and registers, native's, and the pack-conv-weights choices that
// derive from it moving the expected way on a machine of smaller caches or
// more cores.
#include "cgc/machine.h"

#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "graph_builder.h"
#include "ir/verifier.h"
#include "ir_check.h"
#include "passes/pass_manager.h"
#include "pipeline/targets.h"

using cgc::testing::checkIr;
using cgc::testing::GraphBuilder;
namespace fs = std::filesystem;
namespace passes = cgc::passes;
namespace rt = cgc::rt;

namespace {

/// A sysfs tree under a fresh temporary directory, removed at the end.
struct FakeSysfs {
  fs::path root = fs::temp_directory_path() / fmt::format("cgc_sysfs_{}", getpid());

  FakeSysfs() { fs::remove_all(root); }
  ~FakeSysfs() { fs::remove_all(root); }

  /// cpu0's cache index`index` with these files.
  void cache(int index, const std::map<std::string, std::string>& files) {
    const fs::path dir = root / fmt::format("devices/system/cpu/cpu0/cache/index{}", index);
    fs::create_directories(dir);
    for (const auto& [name, text] : files) std::ofstream(dir / name) << text << "\n";
  }
};

std::string text(const rt::MachineInfo& m) { return rt::describeMachine(m); }

}  // namespace

TEST_CASE("the machine description reads cpu0's caches from a sysfs tree") {
  FakeSysfs sysfs;
  SECTION("a Zen 4 CCD with SMT: data, instruction, unified caches") {
    sysfs.cache(0,
                {{"level", "1"}, {"type", "Data"}, {"size", "32K"}, {"shared_cpu_list", "0,64"}});
    sysfs.cache(
        1, {{"level", "1"}, {"type", "Instruction"}, {"size", "32K"}, {"shared_cpu_list", "0,64"}});
    sysfs.cache(
        2, {{"level", "2"}, {"type", "Unified"}, {"size", "1024K"}, {"shared_cpu_list", "0,64"}});
    sysfs.cache(3, {{"level", "3"},
                    {"type", "Unified"},
                    {"size", "32768K"},
                    {"shared_cpu_list", "0-7,64-71"}});
    const rt::MachineInfo m = rt::readSysfsCaches(sysfs.root.string());
    INFO(text(m));
    CHECK(m.l1dBytes == 32 << 10);
    CHECK(m.l2Bytes == 1 << 20);
    CHECK(m.l3Bytes == 32 << 20);
    CHECK(m.l3SharedBy == 16);
  }
  SECTION("indices with a gap, sizes in M, no L3") {
    sysfs.cache(0, {{"level", "1"}, {"type", "Data"}, {"size", "64K"}, {"shared_cpu_list", "0"}});
    sysfs.cache(2,
                {{"level", "2"}, {"type", "Unified"}, {"size", "1M"}, {"shared_cpu_list", "0-3"}});
    const rt::MachineInfo m = rt::readSysfsCaches(sysfs.root.string());
    INFO(text(m));
    CHECK(m.l1dBytes == 64 << 10);
    CHECK(m.l2Bytes == 1 << 20);
    CHECK(m.l3Bytes == 0);
    CHECK(m.lastLevelBytes() == 1 << 20);
  }
  SECTION("no cache directory at all: nothing") {
    CHECK(rt::readSysfsCaches(sysfs.root.string()) == rt::MachineInfo{});
  }
}

namespace {

struct Cache {
  uint32_t type, level, sharing, ways, line, sets;
};
constexpr Cache kCaches[] = {
    {1, 1, 2, 12, 64, 64},      // 48 KiB L1d
    {2, 1, 2, 8, 64, 64},       // 32 KiB L1i
    {3, 2, 2, 20, 64, 1024},    // 1.25 MiB L2
    {3, 3, 32, 12, 64, 49152},  // 36 MiB L3
};

/// A CPU whose leaf kLeaf lists kCaches. eax: type, level, CPUs sharing -
/// 1; ebx: ways - 1, partitions - 1, line - 1; ecx: sets - 1.
template <uint32_t kLeaf>
void fakeCpuid(uint32_t leaf, uint32_t sub, uint32_t (&r)[4]) {
  r[0] = r[1] = r[2] = r[3] = 0;
  if (leaf != kLeaf || sub >= std::size(kCaches)) return;
  const Cache& c = kCaches[sub];
  r[0] = c.type | c.level << 5 | (c.sharing - 1) << 14;
  r[1] = (c.ways - 1) << 22 | (c.line - 1);
  r[2] = c.sets - 1;
}

}  // namespace

TEST_CASE("the machine description reads CPUID's cache leaves (Intel 4, AMD 0x8000001D)") {
  for (auto [leaf, cpuid] :
       {std::pair<uint32_t, rt::Cpuid>{4, fakeCpuid<4>}, {0x8000001D, fakeCpuid<0x8000001D>}}) {
    const rt::MachineInfo m = rt::readCpuidCaches(cpuid);
    INFO(fmt::format("leaf {:#x}: {}", leaf, text(m)));
    CHECK(m.l1dBytes == 48 << 10);
    CHECK(m.l2Bytes == 1280 << 10);
    CHECK(m.l3Bytes == 36 << 20);
    CHECK(m.l3SharedBy == 32);
  }
  CHECK(rt::readCpuidCaches(fakeCpuid<7>) == rt::MachineInfo{});
}

TEST_CASE("native's machine is this machine's; a name without a row has none") {
  const cgc::driver::Target native = cgc::driver::findTarget("native");
  CHECK(native.machine == rt::hostMachine(32 * native.lanes));
  CHECK_FALSE(rt::machineOfTarget("no-such-target", 512));
}

namespace {

/// y = Conv(x), x [1, channels, side, side], the window kh x kw padded to
/// keep the plane, through pack-conv-weights for `machine`.
GraphBuilder packedConv(int64_t channels, int64_t side, int64_t kh, int64_t kw, int64_t stride,
                        const rt::MachineInfo& machine) {
  GraphBuilder b("conv");
  const int x = b.input("x", {1, channels, side, side});
  const int64_t out = (side + 2 * (kh / 2) - kh) / stride + 1;
  b.output(b.node("Conv", "conv", {x, b.smoothConstant("w", {channels, channels, kh, kw})},
                  {1, channels, out, (side + 2 * (kw / 2) - kw) / stride + 1},
                  {{"kernel_shape", std::vector<int64_t>{kh, kw}},
                   {"strides", std::vector<int64_t>{stride, stride}},
                   {"pads", std::vector<int64_t>{kh / 2, kw / 2, kh / 2, kw / 2}}}),
           "y");
  passes::PassTarget target;
  target.machine = machine;
  REQUIRE(passes::packConvolutionWeights(b.graph, target));
  cgc::ir::verifyGraph(b.graph);
  return b;
}

}  // namespace

TEST_CASE("pack-conv-weights' thresholds follow the target's caches and cores") {
  const rt::MachineInfo typical = passes::PassTarget{}.machine;
  INFO("the default target: " << text(typical));
  SECTION("transformed weights up to half the L3: a smaller L3 takes the packed kernel") {
    // Inception-v3's 192-to-192 1x7 layer on 17x17: F(2, 7)'s 8 matrices,
    // 1.2 MB; 153 tiles.
    checkIr(packedConv(192, 17, 1, 7, 1, typical).graph,
            {"conv = Conv(%x, %w_winograd)", "SAME: cgc_conv_variant = \"Winograd\""});
    rt::MachineInfo small = typical;
    small.l3Bytes = 2 << 20;
    INFO("the small machine: " << text(small));
    checkIr(packedConv(192, 17, 1, 7, 1, small).graph,
            {"conv = Conv(%x, %w_packed)", "SAME: cgc_conv_variant = \"Packed\""});
  }
  SECTION("16 tiles a core: more cores take the packed kernel") {
    rt::MachineInfo many = typical;
    many.cores = 16;  // 256 tiles
    INFO("the many-core machine: " << text(many));
    checkIr(packedConv(192, 17, 1, 7, 1, many).graph,
            {"conv = Conv(%x, %w_packed)", "SAME: cgc_conv_variant = \"Packed\""});
  }
  SECTION("F(4x4, 3x3) where a core keeps its weights in L2 or has 16 tiles to stream them for") {
    // cgc_packed_weights 3 is F(4x4)'s 36 matrices, 2 F(2x2)'s 16.
    // ResNet-50's 256-to-256 on 14x14: 9.4 MB for 16 tiles, 8 a core on two.
    checkIr(packedConv(256, 14, 3, 3, 1, typical).graph,
            {"conv = Conv(%x, %w_winograd)", "SAME: cgc_packed_weights = 2"});
    rt::MachineInfo one = typical;
    one.cores = 1;
    INFO("the one-core machine: " << text(one));
    checkIr(packedConv(256, 14, 3, 3, 1, one).graph,
            {"conv = Conv(%x, %w_winograd)", "SAME: cgc_packed_weights = 3"});
    // 128-to-128 on 28x28: 2.4 MB for 49 tiles; its L2 on a larger one.
    checkIr(packedConv(128, 28, 3, 3, 1, typical).graph,
            {"conv = Conv(%x, %w_winograd)", "SAME: cgc_packed_weights = 3"});
    rt::MachineInfo many = typical;
    many.cores = 16;
    INFO("the many-core machine: " << text(many));
    checkIr(packedConv(128, 28, 3, 3, 1, many).graph,
            {"conv = Conv(%x, %w_winograd)", "SAME: cgc_packed_weights = 2"});
    many.l2Bytes = 4 << 20;
    INFO("with 4 MiB of L2: " << text(many));
    checkIr(packedConv(128, 28, 3, 3, 1, many).graph,
            {"conv = Conv(%x, %w_winograd)", "SAME: cgc_packed_weights = 3"});
  }
  SECTION("the packed GEMM's depth step keeps a panel's slice in a quarter of L2") {
    // A 3x3 stride-2 layer: packed panels.
    checkIr(packedConv(64, 28, 3, 3, 2, typical).graph,
            {"conv = Conv(%x, %w_packed)", "SAME: cgc_conv_variant = \"Packed\"",
             "SAME: cgc_depth_step = 1024"});
    rt::MachineInfo small = typical;
    small.l2Bytes = 256 << 10;
    INFO("the small machine: " << text(small));
    checkIr(packedConv(64, 28, 3, 3, 2, small).graph,
            {"conv = Conv(%x, %w_packed)", "SAME: cgc_conv_variant = \"Packed\"",
             "SAME: cgc_depth_step = 256"});
    // AVX2: the slice of a tile group (16 channels) in three quarters of L1d.
    rt::MachineInfo avx2 = typical;
    avx2.vectorBits = 256;
    INFO("the AVX2 machine: " << text(avx2));
    checkIr(packedConv(64, 28, 3, 3, 2, avx2).graph,
            {"conv = Conv(%x, %w_packed)", "SAME: cgc_depth_step = 384"});
  }
}
