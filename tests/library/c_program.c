/* The C interface of a generated model, from C11: a Gather model
 * (embedding rows picked by index) compiled with --weights file.
 * Exercises: create with a missing weights file (NULL and a message), the
 * arena API (too small: NULL; the caller's: used), set_input's size check,
 * an index out of range (an error code from run and a message naming the
 * node), then a good run checked against the expected rows.
 * Usage: c_program WEIGHTS_FILE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed.h"

static int failures = 0;

static void expect(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const cgc_model_info* info = embed_info();
  expect(info->num_inputs == 1 && info->num_outputs == 1, "one input, one output");

  embed* missing = embed_create("no/such/embed.weights.bin");
  expect(missing == NULL, "create with a missing weights file fails");
  expect(strstr(embed_last_error(), "no/such/embed.weights.bin") != NULL,
         "the message names the weights file");

  const int64_t need = embed_arena_bytes();
  void* arena = aligned_alloc(64, (size_t)((need + 63) / 64 * 64));
  expect(embed_create_with_arena(argv[1], arena, need - 64) == NULL,
         "an arena too small is refused");
  expect(strlen(embed_last_error()) > 0, "with a message");
  embed* model = embed_create_with_arena(argv[1], arena, need);
  expect(model != NULL, embed_last_error());
  if (!model) return 1;

  int64_t indices[3] = {2, 9, 0};
  expect(embed_set_input(model, 0, indices, 8) == CGC_ERROR_INVALID_ARGUMENT,
         "set_input checks the size");
  expect(embed_set_input(model, 0, indices, sizeof indices) == CGC_OK, "set_input");
  expect(embed_run(model) == CGC_ERROR_INDEX_OUT_OF_RANGE, "index 9 is out of range");
  expect(strstr(embed_error(model), "lookup") != NULL, "the message names the node");
  fprintf(stderr, "run with index 9: %s\n", embed_error(model));

  indices[1] = -1; /* the last row */
  expect(embed_set_input(model, 0, indices, sizeof indices) == CGC_OK, "set_input");
  expect(embed_run(model) == CGC_OK, "a run after a failed run succeeds");
  float rows[3][2];
  expect(embed_get_output(model, 0, rows, sizeof rows) == CGC_OK, "get_output");
  /* Row r of the table is {10 r, 10 r + 1}; rows 2, 3 and 0. */
  const float want[3][2] = {{20, 21}, {30, 31}, {0, 1}};
  expect(memcmp(rows, want, sizeof want) == 0, "the rows picked");
  expect(embed_output(model, 0) != NULL && embed_output(model, 1) == NULL, "outputs by index");
  embed_destroy(model);
  free(arena);
  printf("c_program: %s\n", failures ? "FAILED" : "the C interface behaves as documented");
  return failures ? 1 : 0;
}
