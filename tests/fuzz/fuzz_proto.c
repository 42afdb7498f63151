/*
 * fuzz_proto.c -- libFuzzer target for the control-message decoder (common/proto.c).
 *
 * Every byte string a peer could send goes to proto_decode(); the target asserts what the
 * runtime relies on: decoding never reads outside the input (ASan), never invokes
 * undefined behaviour (UBSan), and anything it accepts is canonical -- it re-encodes to
 * exactly the input bytes (tests/fuzz/proto_roundtrip.h says why that matters).  A
 * violation calls abort(), which libFuzzer reports as a crash with the input saved.
 * Build and run: `make fuzz` (clang -fsanitize=fuzzer,address,undefined).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "proto_roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static uint8_t again[PROTO_MAX_SIZE];
  if (proto_rt_check(data, size, again) == 0) {
    fprintf(stderr, "fuzz_proto: an accepted message of %zu bytes re-encodes differently\n",
            size);
    abort();
  }
  return 0;
}
