// ModelRuntime, the state of one generated model instance, driven by a
// hand-written ModelSpec and body functions (no generated code): the checks
// at creation (ABI, CPU features, the caller's arena, the weights file),
// weights shared per file, the first failure of a run naming its node, the
// guard against two concurrent run() calls, the destructor's abort, and
// where several instances' threads are placed, and copy_padded (a
// --specialize bucket's copies) against a reference loop.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <latch>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cgc/kernels/common.h"
#include "cgc/runtime.h"

namespace fs = std::filesystem;
using cgc::ModelRuntime;
using cgc::rt::Team;

namespace {

/// A model description of three nodes, as generated code would declare it.
struct TestModel {
  const char* names[3] = {"embed", "lookup", "head"};
  const char* ops[3] = {"Gather", "Gather", "Relu"};
  cgc_model_info info{};
  cgc::ModelSpec spec{};

  explicit TestModel(int executors = 1, int threads = 1, int64_t arena_bytes = 256,
                     int64_t weight_bytes = 0) {
    info.name = "TestModel";
    info.source = "test.onnx";
    info.graph_hash = "0";
    info.arena_bytes = arena_bytes;
    info.weight_bytes = weight_bytes;
    info.num_nodes = 3;
    info.node_names = names;
    info.node_ops = ops;
    info.executors = executors;
    info.threads_per_executor = threads;
    info.cgc_version = "0.1.0";
    info.target = "native";
    spec.info = &info;
    spec.abi_version = CGC_RUNTIME_ABI_VERSION;
    spec.signals = 1;
    spec.weight_bytes = weight_bytes;
    spec.weights_file_name = "test_model.weights.bin";
    spec.module_symbol = reinterpret_cast<const void*>(&cgc::available_cpus);
  }
  TestModel(const TestModel&) = delete;
  TestModel& operator=(const TestModel&) = delete;
};

/// A file of `bytes` bytes (0, 1, 2, ...) in the temporary directory,
/// removed at the end of the scope.
struct TempFile {
  fs::path path;
  TempFile(const std::string& name, int64_t bytes)
      : path(fs::temp_directory_path() / (std::to_string(getpid()) + "_" + name)) {
    std::ofstream out(path, std::ios::binary);
    for (int64_t i = 0; i < bytes; ++i) out.put(static_cast<char>(i & 0xff));
  }
  ~TempFile() { fs::remove(path); }
};

/// The code and message of the Error that `make` throws (0 when none).
template <typename Make>
std::pair<cgc_status, std::string> errorOf(Make make) {
  try {
    make();
  } catch (const cgc::Error& e) {
    return {e.code(), e.what()};
  }
  return {CGC_OK, ""};
}

using Catch::Matchers::Contains;

}  // namespace

TEST_CASE("model runtime: another runtime ABI is refused, naming both versions") {
  TestModel model;
  model.spec.abi_version = CGC_RUNTIME_ABI_VERSION + 1;
  auto [code, message] = errorOf([&] { ModelRuntime runtime(model.spec); });
  CHECK(code == CGC_ERROR_RUNTIME_MISMATCH);
  CHECK_THAT(message, Contains("TestModel"));
  CHECK_THAT(message, Contains("ABI " + std::to_string(CGC_RUNTIME_ABI_VERSION + 1)));
  CHECK_THAT(message, Contains("ABI " + std::to_string(CGC_RUNTIME_ABI_VERSION)));
}

TEST_CASE("model runtime: CPU features are checked by name") {
  TestModel model;
  const char* unknown[] = {"warp-drive", nullptr};
  model.spec.cpu_features = unknown;
  auto [code, message] = errorOf([&] { ModelRuntime runtime(model.spec); });
  CHECK(code == CGC_ERROR_CPU);
  CHECK_THAT(message, Contains("warp-drive"));
#if defined(__x86_64__)
  const char* present[] = {"sse4.2", nullptr};
  model.spec.cpu_features = present;
  CHECK(errorOf([&] { ModelRuntime runtime(model.spec); }).first == CGC_OK);
#endif
}

TEST_CASE("model runtime: a CPU feature this machine lacks is named", "[.lacks_vnni]") {
#if defined(__x86_64__)
  TestModel model;
  __builtin_cpu_init();
  const char* lacking = !__builtin_cpu_supports("avx512f")      ? "avx512f"
                        : !__builtin_cpu_supports("avx512vnni") ? "avx512vnni"
                                                                : nullptr;
  if (!lacking) FAIL("this CPU has AVX-512 VNNI: ctest's kernels_lacks_vnni skips it");
  const char* missing[] = {"sse4.2", lacking, nullptr};
  model.spec.cpu_features = missing;
  auto [lackCode, lackMessage] = errorOf([&] { ModelRuntime runtime(model.spec); });
  CHECK(lackCode == CGC_ERROR_CPU);
  CHECK_THAT(lackMessage, Contains(std::string("model TestModel (target native) was compiled "
                                               "for a CPU with ") +
                                   lacking + "; this CPU lacks it"));
#else
  FAIL("needs an x86-64 CPU: ctest's kernels_lacks_vnni skips it");
#endif
}

TEST_CASE("model runtime: weights files") {
  TestModel model(1, 1, 256, 1000);
  SECTION("a missing file is named") {
    const std::string path = (fs::temp_directory_path() / "no_such_cgc.weights.bin").string();
    auto [code, message] = errorOf([&] { ModelRuntime runtime(model.spec, path.c_str()); });
    CHECK(code == CGC_ERROR_WEIGHTS);
    CHECK_THAT(message, Contains("cannot open weights file " + path));
  }
  SECTION("a file of another size is refused") {
    TempFile file("short.weights.bin", 999);
    auto [code, message] = errorOf([&] { ModelRuntime runtime(model.spec, file.path.c_str()); });
    CHECK(code == CGC_ERROR_WEIGHTS);
    CHECK_THAT(message, Contains(file.path.string() + " does not hold 1000 bytes"));
  }
  SECTION("instances naming one file share one aligned copy") {
    TempFile file("shared.weights.bin", 1000);
    ModelRuntime a(model.spec, file.path.c_str());
    // The same file by another spelling.
    const fs::path other = file.path.parent_path() / "." / file.path.filename();
    ModelRuntime b(model.spec, other.c_str());
    REQUIRE(a.weights() != nullptr);
    CHECK(a.weights() == b.weights());
    CHECK(reinterpret_cast<uintptr_t>(a.weights()) % 64 == 0);
    CHECK(a.weights()[999] == static_cast<unsigned char>(999 & 0xff));
    // Another size for the same file is still checked against the file.
    TestModel bigger(1, 1, 256, 2000);
    CHECK(errorOf([&] { ModelRuntime c(bigger.spec, file.path.c_str()); }).first ==
          CGC_ERROR_WEIGHTS);
  }
  SECTION("embedded weights are used unless a file is named") {
    alignas(64) static const unsigned char embedded[1000] = {42};
    model.spec.embedded_weights = embedded;
    ModelRuntime inBinary(model.spec);
    CHECK(inBinary.weights() == embedded);
    TempFile file("override.weights.bin", 1000);
    ModelRuntime fromFile(model.spec, file.path.c_str());
    CHECK(fromFile.weights() != embedded);
  }
  SECTION("no weights need no file") {
    TestModel none(1, 1, 256, 0);
    ModelRuntime runtime(none.spec);
    CHECK(runtime.weights() == nullptr);
  }
}

TEST_CASE("model runtime: the default weights file lies next to the binary") {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  REQUIRE(!error);
  // A symbol of this executable (the runtime is linked statically).
  const void* here = reinterpret_cast<const void*>(&cgc::available_cpus);
  CHECK(cgc::default_weights_path(here, "m.weights.bin") ==
        (exe.parent_path() / "m.weights.bin").string());
  // A symbol of a shared library: its directory.
  const fs::path libc = cgc::default_weights_path(reinterpret_cast<const void*>(&std::puts), "w");
  CHECK(libc.is_absolute());
  CHECK(libc.filename() == "w");
  CHECK(libc.parent_path() != exe.parent_path());
  CHECK(cgc::default_weights_path(nullptr, "m.weights.bin") == "m.weights.bin");

  // A runtime with no path reads it from there.
  TestModel model(1, 1, 64, 100);
  model.spec.weights_file_name = "cgc_model_runtime_test.weights.bin";
  const fs::path beside = exe.parent_path() / model.spec.weights_file_name;
  {
    std::ofstream out(beside, std::ios::binary);
    out << std::string(100, 'w');
  }
  {
    ModelRuntime runtime(model.spec);
    CHECK(runtime.weights()[99] == 'w');
  }
  fs::remove(beside);
}

TEST_CASE("model runtime: arenas") {
  TestModel model(1, 1, 1000);
  alignas(64) static unsigned char memory[2048];
  SECTION("a caller's arena too small or misaligned is refused with the sizes") {
    auto [code, message] = errorOf([&] { ModelRuntime runtime(model.spec, nullptr, memory, 999); });
    CHECK(code == CGC_ERROR_ARENA);
    CHECK_THAT(message, Contains("1000 bytes"));
    CHECK_THAT(message, Contains("999"));
    auto [alignCode, alignMessage] =
        errorOf([&] { ModelRuntime runtime(model.spec, nullptr, memory + 8, 2000); });
    CHECK(alignCode == CGC_ERROR_ARENA);
    CHECK_THAT(alignMessage, Contains("64-byte aligned"));
  }
  SECTION("a caller's arena is used as given, and not freed") {
    std::memset(memory, 0xab, sizeof memory);
    {
      ModelRuntime runtime(model.spec, nullptr, memory, sizeof memory);
      CHECK(runtime.arena() == memory);
      CHECK(memory[0] == 0xab);  // not zeroed either
    }
    memory[0] = 1;  // still the caller's (a free would fail under ASan)
  }
  SECTION("an allocated arena is zeroed and aligned") {
    ModelRuntime runtime(model.spec);
    REQUIRE(runtime.arena() != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(runtime.arena()) % 64 == 0);
    CHECK(runtime.arena()[999] == 0);
  }
  SECTION("allocate_arena") {
    unsigned char* empty = cgc::allocate_arena(0);
    CHECK(reinterpret_cast<uintptr_t>(empty) % 64 == 0);
    std::free(empty);
    CHECK(errorOf([] { cgc::allocate_arena(int64_t{1} << 62); }).first == CGC_ERROR_OUT_OF_MEMORY);
  }
}

namespace {

struct FailContext {
  ModelRuntime* runtime;
  bool failing = true;
};

/// Executor 0's threads 1 and 0 fail, in that order (a barrier between);
/// executor 1, when there is one, fails after both.
void failTwice(void* context, int executor, const Team& team) {
  auto* c = static_cast<FailContext*>(context);
  if (!c->failing) return;
  if (executor == 0) {
    if (team.thread() == 1 || team.size() == 1)
      c->runtime->fail(1, cgc::rt::Status::kIndexOutOfRange);
    team.barrier();
    if (team.thread() == 0) c->runtime->fail(2, cgc::rt::Status::kSizeBeyondBound);
  }
}

}  // namespace

TEST_CASE("model runtime: a run reports the first failure, naming its node") {
  TestModel model(1, 2);
  ModelRuntime runtime(model.spec);
  FailContext context{&runtime};
  cgc::Status status = runtime.run(failTwice, &context);
  CHECK(status.code() == CGC_ERROR_INDEX_OUT_OF_RANGE);
  CHECK(status.message() == "node 'lookup' (Gather): an index is out of range");
  context.failing = false;
  CHECK(runtime.run(failTwice, &context).ok());  // a run after a failed run
  // A node the description does not hold.
  runtime.fail(7, cgc::rt::Status::kSizeBeyondBound);  // before a run: cleared by it
  CHECK(runtime.run(failTwice, &context).ok());
  context.failing = true;
  TestModel shorter(1, 2);
  shorter.info.num_nodes = 1;
  ModelRuntime fewer(shorter.spec);
  context.runtime = &fewer;
  CHECK(fewer.run(failTwice, &context).message() == "node #1: an index is out of range");
}

TEST_CASE("model runtime: failures race from several threads; one wins whole") {
  TestModel model(2, 1);
  ModelRuntime runtime(model.spec);
  auto body = [](void* context, int executor, const Team&) {
    auto* r = static_cast<ModelRuntime*>(context);
    for (int i = 0; i < 100; ++i)
      r->fail(executor,
              executor ? cgc::rt::Status::kSizeBeyondBound : cgc::rt::Status::kIndexOutOfRange);
  };
  for (int repeat = 0; repeat < 20; ++repeat) {
    cgc::Status status = runtime.run(body, &runtime);
    CHECK((status.message() == "node 'embed' (Gather): an index is out of range" ||
           status.message() ==
               "node 'lookup' (Gather): a data-dependent size exceeds its bound (see --bound)"));
    CHECK(status.code() == (status.message()[6] == 'e' ? CGC_ERROR_INDEX_OUT_OF_RANGE
                                                       : CGC_ERROR_SIZE_BEYOND_BOUND));
  }
}

namespace {

struct Gate {
  std::latch entered{1};
  std::latch release{1};
};

/// The caller's thread signals that it is inside run(), then waits.
void blockInRun(void* context, int executor, const Team& team) {
  auto* gate = static_cast<Gate*>(context);
  if (executor == 0 && team.thread() == 0) {
    gate->entered.count_down();
    gate->release.wait();
  }
}

}  // namespace

TEST_CASE("model runtime: run() from a second thread at once returns BUSY") {
  TestModel model(1, 2);
  ModelRuntime runtime(model.spec);
  Gate gate;
  cgc::Status first;
  std::thread runner([&] { first = runtime.run(blockInRun, &gate); });
  gate.entered.wait();
  cgc::Status second = runtime.run(blockInRun, &gate);  // returns at once
  gate.release.count_down();
  runner.join();
  CHECK(first.ok());
  CHECK(second.code() == CGC_ERROR_BUSY);
  CHECK_THAT(second.message(), Contains("TestModel: run() entered from two threads at once"));
  Gate open;
  open.release.count_down();
  CHECK(runtime.run(blockInRun, &open).ok());  // not stuck busy
}

TEST_CASE("model runtime: an exception in a body is an internal error; the next run works") {
  TestModel model(1, 2);
  ModelRuntime runtime(model.spec);
  bool throwing = true;
  auto body = [](void* context, int, const Team& team) {
    if (team.thread() == 0 && *static_cast<bool*>(context)) throw std::runtime_error("boom");
  };
  cgc::Status status = runtime.run(body, &throwing);
  CHECK(status.code() == CGC_ERROR_INTERNAL);
  CHECK_THAT(status.message(), Contains("boom"));
  throwing = false;
  CHECK(runtime.run(body, &throwing).ok());
}

TEST_CASE("model runtime: the profiler counts runs") {
  TestModel model;
  ModelRuntime runtime(model.spec);
  cgc::Profiler profiler;
  runtime.set_profiler(&profiler);
  auto nothing = [](void*, int, const Team&) {};
  for (int i = 0; i < 3; ++i) CHECK(runtime.run(nothing, nullptr).ok());
  CHECK(profiler.runs() == 3);
}

TEST_CASE("model runtime: destroying an instance inside run() aborts, saying so") {
  int pipeFds[2];
  REQUIRE(pipe(pipeFds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    signal(SIGABRT, SIG_DFL);  // not Catch2's handler
    dup2(pipeFds[1], STDERR_FILENO);
    TestModel model;
    auto* runtime = new ModelRuntime(model.spec);
    Gate gate;
    std::thread runner([&] { (void)runtime->run(blockInRun, &gate); });
    gate.entered.wait();
    delete runtime;  // aborts
    _exit(0);
  }
  close(pipeFds[1]);
  std::string output;
  char buffer[256];
  for (ssize_t got; (got = read(pipeFds[0], buffer, sizeof buffer)) > 0;)
    output.append(buffer, got);
  close(pipeFds[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK_THAT(output,
             Contains("cgc: TestModel destroyed while run() is in progress on another thread"));
}

TEST_CASE("model runtime: the last create error is per thread") {
  cgc::set_last_create_error("cgc: cannot open weights file x");
  std::string other = "unset";
  std::thread([&] { other = cgc::last_create_error(); }).join();
  CHECK(other.empty());
  CHECK(std::string(cgc::last_create_error()) == "cgc: cannot open weights file x");
  cgc::set_last_create_error("");
}

TEST_CASE("model runtime: instances in one process take different cores while they can",
          "[.cpus2]") {
  const int cpus = cgc::available_cpus();
  {  // one thread each: no workers, nothing claimed
    TestModel one(1, 1);
    ModelRuntime a(one.spec), b(one.spec);
    CHECK(a.placement() == "1 executor(s) x 1 thread(s): e0 [caller]");
    CHECK(b.placement() == a.placement());
  }
  if (cpus < 2) FAIL("needs 2 CPUs: ctest's kernels_cpus2 skips it");
  TestModel pair(1, 2), automatic(1, 0);
  {
    ModelRuntime a(pair.spec);
    const int x = a.pool().placement().at(1);
    REQUIRE(x >= 0);  // A holds the caller's CPU and X
    ModelRuntime b(pair.spec);
    const int y = b.pool().placement().at(1);
    if (cpus >= 4) {
      CHECK(y >= 0);
      CHECK(y != x);
      CHECK_THAT(b.placement(), !Contains("unpinned"));
    } else {
      WARN("2 or 3 CPUs: the second instance cannot have a core of its own");
      CHECK(y == -1);
      CHECK(b.placement() ==
            "1 executor(s) x 2 thread(s): e0 [caller, unpinned]; unpinned: cores held by "
            "other instances");
    }
    // Threads decided at creation take only the CPUs still free.
    ModelRuntime c(automatic.spec);
    const int free = cpus - (cpus >= 4 ? 4 : 2);
    CHECK(c.pool().threads_per_executor() == std::max(1, free));
    CHECK_THAT(c.placement(), !Contains("unpinned"));
  }
  // Destroyed instances give their CPUs back: every CPU again.
  ModelRuntime d(automatic.spec);
  CHECK(d.pool().threads_per_executor() == cpus);
  CHECK_THAT(d.placement(), !Contains("unpinned"));
}

TEST_CASE("copy_padded pads to a larger shape with zeros and takes a leading part back") {
  // Against a reference loop over every index of the larger shape: an
  // element both shapes hold is copied, every other one of the larger is 0.
  const std::vector<std::vector<int64_t>> smalls = {
      {3}, {2, 5}, {1, 3, 4}, {0, 3, 2}, {2, 1, 3, 2}};
  const std::vector<std::vector<int64_t>> bigs = {{4}, {4, 5}, {4, 3, 6}, {2, 3, 2}, {3, 2, 3, 4}};
  for (size_t c = 0; c < smalls.size(); ++c) {
    const std::vector<int64_t>& small = smalls[c];
    const std::vector<int64_t>& big = bigs[c];
    const int rank = static_cast<int>(small.size());
    int64_t nSmall = 1, nBig = 1;
    for (int a = 0; a < rank; ++a) nSmall *= small[a], nBig *= big[a];
    std::vector<float> from(static_cast<size_t>(nSmall));
    for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<float>(i + 1);
    std::vector<float> padded(static_cast<size_t>(nBig) + 4, -1.0f);  // 4 guards
    cgc::copy_padded(from.data(), small.data(), padded.data(), big.data(), rank, 4);
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    for (int64_t k = 0; k < nBig; ++k) {
      int64_t offset = 0;
      bool inside = true;
      for (int a = 0; a < rank; ++a) {
        inside = inside && index[a] < small[a];
        offset = offset * small[a] + index[a];
      }
      INFO("case " << c << " element " << k);
      CHECK(padded[static_cast<size_t>(k)] == (inside ? from[static_cast<size_t>(offset)] : 0.0f));
      for (int a = rank - 1; a >= 0 && ++index[a] == big[a]; --a) index[a] = 0;
    }
    for (size_t g = 0; g < 4; ++g) CHECK(padded[static_cast<size_t>(nBig) + g] == -1.0f);
    // Back: the leading part is the original.
    std::vector<float> back(static_cast<size_t>(nSmall) + 4, -1.0f);
    cgc::copy_padded(padded.data(), big.data(), back.data(), small.data(), rank, 4);
    CHECK(std::equal(from.begin(), from.end(), back.begin()));
    for (size_t g = 0; g < 4; ++g) CHECK(back[static_cast<size_t>(nSmall) + g] == -1.0f);
  }
}
