// A stand-alone timing driver for a model that `cgc run` built into a shared
// library (<cache>/<hash>/<name>.so: the runtime linked in, a C API whose
// symbols carry the model's prefix, cgc/c_api.h). For measuring on a machine
// that has neither cgc nor a C++ compiler: bench/device/run.sh.
//
// Usage: drive MODEL.so PREFIX INPUT_DIR RUNS ROUNDS THREADS [OUTPUT_DIR]
//
// Pins itself to the first THREADS CPUs it may use (CPUs 0..THREADS-1 on an
// unrestricted machine) before the model is created, so that the model's
// threads, which default to every core the process may use, are THREADS.
// Loads input N from INPUT_DIR/input_N.bin (raw little-endian, the size that
// PREFIX_info() gives), warms up (a first run, then at least 3 runs and
// 50 ms), then times ROUNDS rounds of RUNS inferences and prints one JSON
// line: the median of the rounds' medians (median_ms), each round's median
// (round_ms), and the median and minimum of all runs. With OUTPUT_DIR,
// writes output N raw to OUTPUT_DIR/output_N.bin.
//
// Exit status: 0; 2 for a usage, file or run error; 3 when the library
// cannot be loaded or the model cannot be created (a CPU without the
// target's instruction set: the create error, or SIGILL). Every failure
// prints a JSON line with "error".
//
// Build: g++ -O2 -march=x86-64 -fno-exceptions -fno-rtti -static-libstdc++
//        -static-libgcc -I runtime/include -o drive drive.cpp -ldl
// It uses the C library only (no std::string, vector or iostream), so that
// nothing of libstdc++ or the unwinder is linked in and the binary needs no
// newer glibc than the models' libraries do (2.34: dlopen's version).
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgc/c_api.h"

namespace {

typedef void* (*CreateFn)(const char*);
typedef const char* (*LastErrorFn)(void);
typedef void (*DestroyFn)(void*);
typedef cgc_status (*RunFn)(void*);
typedef const char* (*ErrorFn)(const void*);
typedef cgc_status (*SetInputFn)(void*, int, const void*, int64_t);
typedef cgc_status (*GetOutputFn)(const void*, int, void*, int64_t);
typedef const cgc_model_info* (*InfoFn)(void);
typedef const char* (*PlacementFn)(const void*);

const char* g_model = "";  // for the error lines

// Writes s as a JSON string (quoted, escaped) to out.
void putJson(FILE* out, const char* s) {
  fputc('"', out);
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) {
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(out, "\\u%04x", *p);
    else
      fputc(*p, out);
  }
  fputc('"', out);
}

__attribute__((noreturn, format(printf, 2, 3))) void fail(int code, const char* format, ...) {
  char message[2048];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  fputs("{\"model\": ", stdout);
  putJson(stdout, g_model);
  fputs(", \"error\": ", stdout);
  putJson(stdout, message);
  printf(", \"exit\": %d}\n", code);
  fflush(stdout);
  exit(code);
}

// A target's code on a CPU without its instructions can fault before
// create() checks them (a static initialiser, a kernel): report it as a
// create failure instead of dying silently.
void onSigill(int) {
  static const char kLine[] =
      "{\"error\": \"SIGILL: illegal instruction (this CPU lacks the model's target "
      "instruction set)\", \"exit\": 3}\n";
  ssize_t ignored = write(1, kLine, sizeof kLine - 1);
  (void)ignored;
  _exit(3);
}

int compareDoubles(const void* a, const void* b) {
  double x = *static_cast<const double*>(a), y = *static_cast<const double*>(b);
  return x < y ? -1 : x > y;
}

// The median of v[0..n) (sorts v).
double median(double* v, int n) {
  if (n <= 0) return 0;
  qsort(v, n, sizeof *v, compareDoubles);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double nowMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

void* symbol(void* lib, const char* prefix, const char* suffix, bool required = true) {
  char name[512];
  snprintf(name, sizeof name, "%s%s", prefix, suffix);
  void* p = dlsym(lib, name);
  if (!p && required) fail(3, "symbol %s not found: wrong PREFIX?", name);
  return p;
}

// The whole file, malloc'ed; its size in *size. NULL when unreadable.
char* readFile(const char* path, long* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return nullptr;
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = static_cast<char*>(malloc(*size > 0 ? *size : 1));
  bool ok = *size >= 0 && data && fread(data, 1, *size, f) == static_cast<size_t>(*size);
  fclose(f);
  if (!ok) {
    free(data);
    return nullptr;
  }
  return data;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    fprintf(stderr, "usage: %s MODEL.so PREFIX INPUT_DIR RUNS ROUNDS THREADS [OUTPUT_DIR]\n",
            argv[0]);
    return 2;
  }
  g_model = argv[1];
  const char *prefix = argv[2], *inputDir = argv[3];
  const int runs = atoi(argv[4]), rounds = atoi(argv[5]), threads = atoi(argv[6]);
  if (runs < 1 || rounds < 1 || threads < 1) fail(2, "RUNS, ROUNDS and THREADS must be >= 1");
  signal(SIGILL, onSigill);

  // Pin before anything starts a thread: the model sizes its team from the
  // affinity mask at create().
  cpu_set_t allowed, pinned;
  CPU_ZERO(&allowed);
  CPU_ZERO(&pinned);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) fail(2, "sched_getaffinity failed");
  if (CPU_COUNT(&allowed) < threads)
    fail(2, "THREADS %d > the %d CPUs this process may use", threads, CPU_COUNT(&allowed));
  char cpus[4096] = "";
  for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < threads; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    CPU_SET(cpu, &pinned);
    size_t used = strlen(cpus);
    snprintf(cpus + used, sizeof cpus - used, "%s%d", taken ? "," : "", cpu);
    ++taken;
  }
  if (sched_setaffinity(0, sizeof pinned, &pinned) != 0) fail(2, "sched_setaffinity failed");

  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail(3, "dlopen: %s", dlerror());
  auto create = reinterpret_cast<CreateFn>(symbol(lib, prefix, "_create"));
  auto lastError = reinterpret_cast<LastErrorFn>(symbol(lib, prefix, "_last_error"));
  auto destroy = reinterpret_cast<DestroyFn>(symbol(lib, prefix, "_destroy"));
  auto run = reinterpret_cast<RunFn>(symbol(lib, prefix, "_run"));
  auto error = reinterpret_cast<ErrorFn>(symbol(lib, prefix, "_error"));
  auto setInput = reinterpret_cast<SetInputFn>(symbol(lib, prefix, "_set_input"));
  auto getOutput = reinterpret_cast<GetOutputFn>(symbol(lib, prefix, "_get_output"));
  auto infoFn = reinterpret_cast<InfoFn>(symbol(lib, prefix, "_info"));
  auto placementFn = reinterpret_cast<PlacementFn>(symbol(lib, prefix, "_placement", false));
  const cgc_model_info* info = infoFn();

  // Inputs first, so that a missing or wrong-sized file fails before the
  // (possibly slow) create.
  char** inputs = static_cast<char**>(calloc(info->num_inputs + 1, sizeof(char*)));
  long* sizes = static_cast<long*>(calloc(info->num_inputs + 1, sizeof(long)));
  for (int i = 0; i < info->num_inputs; ++i) {
    const cgc_tensor_info& t = info->inputs[i];
    char path[4096];
    snprintf(path, sizeof path, "%s/input_%d.bin", inputDir, i);
    inputs[i] = readFile(path, &sizes[i]);
    if (!inputs[i]) fail(2, "cannot read %s", path);
    if (sizes[i] != t.bytes)
      fail(2, "%s has %ld bytes, input %d '%s' takes %lld", path, sizes[i], i, t.name,
           static_cast<long long>(t.bytes));
  }

  double t0 = nowMs();
  void* model = create(nullptr);
  double createMs = nowMs() - t0;
  if (!model) fail(3, "create: %s", lastError());
  for (int i = 0; i < info->num_inputs; ++i)
    if (setInput(model, i, inputs[i], sizes[i]) != CGC_OK)
      fail(2, "set_input %d: %s", i, error(model));

  auto runOnce = [&] {
    cgc_status s = run(model);
    if (s != CGC_OK) fail(2, "run: status %d: %s", static_cast<int>(s), error(model));
  };

  // Warm-up: the first run (page faults on the weights, the team's threads
  // starting), then at least 3 more runs and 50 ms, at most 100 runs.
  double w0 = nowMs();
  runOnce();
  double firstMs = nowMs() - w0;
  int warmup = 1;
  w0 = nowMs();
  while (warmup < 100 && (warmup < 4 || nowMs() - w0 < 50.0)) {
    runOnce();
    ++warmup;
  }

  double* all = static_cast<double*>(malloc(sizeof(double) * runs * rounds));
  double* round = static_cast<double*>(malloc(sizeof(double) * runs));
  double* roundMedians = static_cast<double*>(malloc(sizeof(double) * rounds));
  double* sortedMedians = static_cast<double*>(malloc(sizeof(double) * rounds));
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < runs; ++i) {
      double a = nowMs();
      runOnce();
      round[i] = all[r * runs + i] = nowMs() - a;
    }
    roundMedians[r] = sortedMedians[r] = median(round, runs);
  }

  if (argc == 8) {
    for (int i = 0; i < info->num_outputs; ++i) {
      const cgc_tensor_info& t = info->outputs[i];
      void* data = malloc(t.bytes > 0 ? t.bytes : 1);
      if (getOutput(model, i, data, t.bytes) != CGC_OK)
        fail(2, "get_output %d: %s", i, error(model));
      char path[4096];
      snprintf(path, sizeof path, "%s/output_%d.bin", argv[7], i);
      FILE* f = fopen(path, "wb");
      if (!f || fwrite(data, 1, t.bytes, f) != static_cast<size_t>(t.bytes))
        fail(2, "cannot write %s", path);
      fclose(f);
      free(data);
    }
  }

  double medianMs = median(sortedMedians, rounds);
  double allMedian = median(all, runs * rounds);  // sorts all: all[0] is the minimum
  fputs("{\"model\": ", stdout);
  putJson(stdout, argv[1]);
  fputs(", \"name\": ", stdout);
  putJson(stdout, info->name ? info->name : "");
  fputs(", \"target\": ", stdout);
  putJson(stdout, info->target ? info->target : "");
  printf(", \"threads\": %d, \"cpus\": ", threads);
  putJson(stdout, cpus);
  fputs(", \"placement\": ", stdout);
  putJson(stdout, placementFn ? placementFn(model) : "");
  fputs(", \"inputs\": [", stdout);
  for (int i = 0; i < info->num_inputs; ++i) {
    if (i) fputs(", ", stdout);
    putJson(stdout, info->inputs[i].name);
  }
  printf(
      "], \"create_ms\": %.3f, \"first_run_ms\": %.3f, \"warmup\": %d, \"runs\": %d, "
      "\"rounds\": %d, \"median_ms\": %.4f, \"all_median_ms\": %.4f, \"min_ms\": %.4f, "
      "\"round_ms\": [",
      createMs, firstMs, warmup, runs, rounds, medianMs, allMedian, all[0]);
  for (int r = 0; r < rounds; ++r) printf("%s%.4f", r ? ", " : "", roundMedians[r]);
  puts("]}");
  fflush(stdout);
  destroy(model);
  return 0;
}
