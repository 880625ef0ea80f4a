/* File weights are mapped, not copied: a Gather model whose table is 64 MB
 * (compiled with --weights file). Creating two instances in this process,
 * and running each, adds far less private memory than the table (its pages
 * are the page cache's, shared with every process that maps the file);
 * the rows come back right, read through the mapping. Prints the private
 * memory each step added and the time to create an instance.
 * Usage: mapped_weights WEIGHTS_FILE ROWS COLUMNS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "big_embed.h"

/* This process's anonymous resident memory (RssAnon), in kB: a copy of the
 * weights would be counted there; pages mapped from the file are not. */
static long privateKb(void) {
  FILE* file = fopen("/proc/self/status", "r");
  if (!file) return -1;
  char line[256];
  long value = -1;
  while (fgets(line, sizeof line, file))
    if (sscanf(line, "RssAnon: %ld kB", &value) == 1) break;
  fclose(file);
  return value;
}

static double seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* Runs the model on three rows and checks them: row r, column c holds
 * r * 4 + c % 4 (exact in float). */
static int runAndCheck(big_embed* model, long rows, long columns) {
  const int64_t indices[3] = {0, rows / 2, rows - 1};
  if (big_embed_set_input(model, 0, indices, sizeof indices) != CGC_OK) return 0;
  if (big_embed_run(model) != CGC_OK) return 0;
  const float* out = (const float*)big_embed_output(model, 0);
  for (int i = 0; i < 3; ++i)
    for (long c = 0; c < columns; ++c)
      if (out[i * columns + c] != (float)(indices[i] * 4 + c % 4)) return 0;
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const long rows = atol(argv[2]), columns = atol(argv[3]);
  const long tableKb = rows * columns * 4 / 1024;
  const long before = privateKb();
  if (before < 0) {
    fprintf(stderr, "FAILED: /proc/self/status has no RssAnon\n");
    return 1;
  }
  double start = seconds();
  big_embed* first = big_embed_create(argv[1]);
  const double createSeconds = seconds() - start;
  big_embed* second = first ? big_embed_create(argv[1]) : NULL;
  if (!first || !second) {
    fprintf(stderr, "FAILED: create: %s\n", big_embed_last_error());
    return 1;
  }
  const int ok = runAndCheck(first, rows, columns) && runAndCheck(second, rows, columns);
  const long added = privateKb() - before;
  printf(
      "table %ld kB; two instances created and run added %ld kB of anonymous memory; "
      "creating one took %.3f ms\n",
      tableKb, added, createSeconds * 1e3);
  big_embed_destroy(second);
  big_embed_destroy(first);
  if (!ok) {
    fprintf(stderr, "FAILED: the rows read through the mapping are wrong\n");
    return 1;
  }
  if (added * 4 > tableKb) {
    fprintf(stderr, "FAILED: the weights were copied (%ld kB anonymous for a %ld kB table)\n",
            added, tableKb);
    return 1;
  }
  return 0;
}
