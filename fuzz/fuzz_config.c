/*
 * fuzz/fuzz_config.c - libFuzzer target for the JIFFY_* configuration parser
 * (src/runtime/config.c): the input is an environment, one NAME=VALUE per line (a line without '='
 * is kept as it is, as a malformed environ entry would be). jf_config_apply_env() reads `environ`,
 * so the target points environ at the input's entries for the call and puts the process's own back
 * after: every per-variable parser (numbers with K/M/G suffixes, booleans, policy and mechanism
 * names, signals by number, name or SIGRTMIN+n, the clock, every policy's parameters, named
 * JIFFY_<POLICY>_<NAME> after the policies' own tables) runs exactly as at jf_run().
 *
 * Owns the checks: apply_env either succeeds or leaves the config untouched with a message
 * naming a JIFFY_ variable; a config it accepts from the defaults passes jf_config_validate()
 * unless two values conflict (validate is the judge: a message is required when it refuses).
 *
 * Built with src/runtime/config.c, src/sched/policy.c and params.c (the real lookup of policy names
 * and the parser of their parameters) and the policies themselves (their parameter tables; no
 * op of theirs is called), and the stubs below for what those reach into the rest of the
 * runtime: the preemption state their spinlocks use, jf_preempt_available() (a mechanism is known
 * when JF_PREEMPT_KNOWN lists it; "uintr" is unavailable, as on most machines), errno's accessor,
 * and the clock of jf_config_print(). When config.c starts calling something new, this file is
 * where its stub goes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jiffy/jiffy.h>

#include "runtime/preempt/preempt.h"

#define MAX_VARS 64

#define CHECK(cond)                                                                             \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "fuzz_config: check failed: %s (line %d)\n", #cond,       \
				__LINE__);                                                      \
			abort();                                                                \
		}                                                                               \
	} while (0)

/* ---- stubs: the mechanisms, errno, the clock ---------------------------------------------- */

int jf_preempt_available(const char *name, char *why, unsigned long len)
{
	const char *known = JF_PREEMPT_KNOWN; /* "none, timer, ..." */
	size_t n = strlen(name);

	if (why && len)
		why[0] = '\0';
	for (const char *p = known; n && (p = strstr(p, name)) != NULL; p += n)
		if ((p == known || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
			return strcmp(name, "uintr") != 0;
	return -EINVAL;
}

/*
 * config.c's errno is Jiffy's (jiffy/thread.h: glibc's errno found at a fixed offset from the
 * thread pointer, or by a call); the offset measured as src/runtime/thread.c does at load time.
 */
long jf__errno_tp_offset;
int jf__errno_tp_ok;

int *jf__errno_location_slow(void)
{
	return __errno_location();
}

long jf__errno_offset_init(void)
{
	char *tp;
	__asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
	jf__errno_tp_offset = (long)((char *)__errno_location() - tp);
	jf__errno_tp_ok = 1;
	return jf__errno_tp_offset;
}

const char *jf_clock_source(void)
{
	return "monotonic";
}

uint64_t jf_tsc_hz(void)
{
	return 0;
}

/* ---- the target -------------------------------------------------------------------------- */

extern char **environ;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *vars[MAX_VARS + 1], *save = NULL;
	char **own = environ, err[512];
	struct jf_config cfg, before;
	int n = 0;

	CHECK(text);
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *line = strtok_r(text, "\n", &save); line && n < MAX_VARS;
	     line = strtok_r(NULL, "\n", &save))
		vars[n++] = line;
	vars[n] = NULL;

	jf_config_default(&cfg);
	memcpy(&before, &cfg, sizeof(cfg)); /* padding too: compared with memcmp */
	err[0] = '\0';
	environ = vars;
	int rc = jf_config_apply_env(&cfg, err, sizeof(err));
	environ = own;

	if (rc != 0) {
		CHECK(rc < 0 && memcmp(&cfg, &before, sizeof(cfg)) == 0);
		CHECK(memchr(err, '\0', sizeof(err)) && strstr(err, "JIFFY_"));
	} else {
		char verr[512] = "";
		if (jf_config_validate(&cfg, verr, sizeof(verr)) != 0)
			CHECK(verr[0] != '\0');
		FILE *null = fopen("/dev/null", "w");
		CHECK(null);
		jf_config_print(&cfg, null);
		fclose(null);
	}
	free(text);
	return 0;
}
