/*
 * fuzz/fake_kvstore.h - the in-memory kvstore the RESP and UDP fuzzers run commands against
 * (fake_kvstore.c; it defines kvstore.h's functions, so link it instead of kvstore.c).
 */
#ifndef JIFFY_FUZZ_FAKE_KVSTORE_H
#define JIFFY_FUZZ_FAKE_KVSTORE_H

#include <stdint.h>

struct kvstore;

/* The one store (pass it where a struct kvstore * is wanted). */
struct kvstore *fake_kvstore(void);
/*
 * Empty it, stop injecting failures, and preload key%012u for i in [0, @keys) (0: free all):
 * values of 8 or 64 bytes, but key 7's is FAKE_KVSTORE_BIG_VALUE bytes (more than a UDP reply
 * holds, and more than the RESP fuzzer lets a reply buffer grow to).
 */
#define FAKE_KVSTORE_BIG_VALUE 20000
void fake_kvstore_reset(uint32_t keys);
/* From now on every @k-th get/put/del/scan fails with an error string (0: never). */
void fake_kvstore_fail_every(unsigned k);

#endif /* JIFFY_FUZZ_FAKE_KVSTORE_H */
