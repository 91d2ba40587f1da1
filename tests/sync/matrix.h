/*
 * tests/sync/matrix.h - the conformance matrix the synchronization storms run in: every built-in
 * policy under the mechanisms none, timer and deadline, in one process (one jf_run() per cell),
 * so that one CTest entry covers 24 configurations instead of 24 processes.
 *
 * Owns: jft_matrix_run(). Under ThreadSanitizer the timer column is left out (TSan cannot follow
 * a signal handler that switches uthreads; tests/CMakeLists.txt says the same for the suite) and
 * the run says so on stdout. JFT_MATRIX_POLICY / JFT_MATRIX_PREEMPT (comma lists) narrow the
 * matrix when reproducing one cell by hand.
 */
#ifndef JFT_MATRIX_H
#define JFT_MATRIX_H

#include "jf_test.h"

static const char *const jft_matrix_policies[] = {"fifo", "ws",  "rr",      "twoq",
						  "cfs",  "eevdf", "central", "lcbe"};
static const char *const jft_matrix_mechs[] = {"none", "timer", "deadline"};

static inline int jft_matrix_wanted(const char *env, const char *name)
{
	const char *list = getenv(env);
	size_t n = strlen(name);

	if (!list || !*list)
		return 1;
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		p += len + (e ? 1 : 0);
	}
	return 0;
}

/*
 * jft_matrix_run() - run @main_fn(@arg) once per cell on @workers workers at a 50 us quantum;
 * @main_fn returns NULL on success (a failed CHECK ends the process, naming the file and line;
 * the cell is printed before it runs). Return: the number of cells run.
 */
static inline int jft_matrix_run(const char *test, unsigned workers, jf_thread_fn main_fn,
				 void *arg)
{
	int cells = 0;

	for (size_t m = 0; m < sizeof(jft_matrix_mechs) / sizeof(jft_matrix_mechs[0]); m++) {
		const char *mech = jft_matrix_mechs[m];
#if defined(__SANITIZE_THREAD__)
		if (strcmp(mech, "timer") == 0) {
			printf("%s: mechanism timer left out under ThreadSanitizer\n", test);
			continue;
		}
#endif
		if (!jft_matrix_wanted("JFT_MATRIX_PREEMPT", mech))
			continue;
		for (size_t p = 0; p < sizeof(jft_matrix_policies) / sizeof(jft_matrix_policies[0]);
		     p++) {
			const char *pol = jft_matrix_policies[p];
			struct jf_config cfg;

			if (!jft_matrix_wanted("JFT_MATRIX_POLICY", pol))
				continue;
			jft_config_fixed(&cfg, workers, pol, mech);
			cfg.quantum_ns = 50000;
			printf("%s: %s/%s\n", test, pol, mech);
			CHECK(jft_run(&cfg, main_fn, arg) == NULL);
			cells++;
		}
	}
	CHECK(cells > 0);
	return cells;
}

#endif /* JFT_MATRIX_H */
