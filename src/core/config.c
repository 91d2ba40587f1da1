/*
 * config.c - defaults, JIFFY_* environment overrides and validation of struct jf_config.
 *
 * Owns: the only place configuration is parsed. Every variable is listed in env_vars[]; an
 * unknown JIFFY_* variable or an unusable value is an error that names the variable and the value.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <signal.h>

#include <jiffy/jiffy.h>

#include "../common/errf.h"
#include "../preempt/preempt.h"

extern char **environ;

#define MIN_STACK (16u * 1024u)
#define MAX_STACK (1024ull * 1024u * 1024u)
#define MAX_SPIN_US (10ull * 1000u * 1000u)

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

void jf_policy_tunables_default(struct jf_policy_tunables *t)
{
	memset(t, 0, sizeof(*t));
	t->quantum_ns = 100 * 1000;
	t->rr_slice_ns = 50 * 1000;          /* Skyloft Table 5 */
	t->twoq_long_ns = 0;                 /* 4 x quantum (Aspen §3.2: "e.g. 100 us") */
	t->cfs_latency_ns = 50 * 1000;       /* Skyloft Table 5 */
	t->cfs_min_gran_ns = 12500;          /* Skyloft Table 5 */
	t->cfs_wakeup_gran_ns = 12500;
	t->eevdf_slice_ns = 12500;           /* Skyloft Table 5 */
	t->central_mq = false;
	t->central_head = false;             /* Shinjuku: preempted requests to the tail */
	t->central_slo_ns = 50 * 1000;
	t->lcbe_be_quantum_ns = 0;           /* 4 x quantum */
}

void jf_config_default(struct jf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->workers = online_cpus();
	if (cfg->workers > JF_MAX_WORKERS)
		cfg->workers = JF_MAX_WORKERS;
	cfg->pin_workers = false;
	snprintf(cfg->policy, sizeof(cfg->policy), "%s", "ws");
	cfg->stack_size = 256 * 1024;
	cfg->stack_cache = 256;
	cfg->spin_ns = 50 * 1000; /* see docs/performance.md, "idle spin" */
	cfg->stats = false;
	/*
	 * "auto" at 20 us: code with safepoints is preempted at the quantum for ~1-3 % (a yield,
	 * no kernel entry); code without them by a signal a grace period (1 ms) later, ~2 % (a
	 * signal costs 19-45 us on a KVM guest). docs/preemption.md, "The default".
	 */
	snprintf(cfg->preempt, sizeof(cfg->preempt), "%s", "auto");
	cfg->quantum_ns = JF_QUANTUM_DEFAULT; /* the mechanism's own: auto 20 us, timer 100 us */
	cfg->grace_ns = JF_GRACE_DEFAULT; /* the mechanism's own: hybrid 50 us, auto 1 ms */
	cfg->preempt_signal = SIGURG;
	cfg->netpoll_ns = 5 * 1000; /* see docs/netpoll.md */
	cfg->preempt_skip = true;
	cfg->pthread_shim = true;
	jf_policy_tunables_default(&cfg->sched);
}

/* Strict unsigned parse: digits only, optional K/M/G suffix (powers of 1024) if @suffixes. */
static int parse_u64(const char *s, bool suffixes, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (suffixes && *end) {
		switch (toupper((unsigned char)*end)) {
		case 'K': mul = 1024; break;
		case 'M': mul = 1024 * 1024; break;
		case 'G': mul = 1024 * 1024 * 1024; break;
		default: return -1;
		}
		end++;
		if (toupper((unsigned char)*end) == 'B' || toupper((unsigned char)*end) == 'I')
			end++;
	}
	if (*end)
		return -1;
	if (mul > 1 && v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") ||
	    !strcasecmp(s, "on")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") ||
	    !strcasecmp(s, "off")) {
		*out = false;
		return 0;
	}
	return -1;
}

/* The policies' time parameters, all in microseconds (struct jf_policy_tunables). */
static const struct {
	const char *name;
	size_t off;
	uint64_t min_us, max_us;
} us_tunables[] = {
#define TUN(n, f, lo, hi) {n, offsetof(struct jf_config, sched.f), lo, hi}
	TUN("JIFFY_RR_SLICE_US", rr_slice_ns, 1, 1000000),
	TUN("JIFFY_TWOQ_LONG_US", twoq_long_ns, 0, 1000000),
	TUN("JIFFY_CFS_LATENCY_US", cfs_latency_ns, 1, 1000000),
	TUN("JIFFY_CFS_MIN_GRAN_US", cfs_min_gran_ns, 1, 1000000),
	TUN("JIFFY_CFS_WAKEUP_GRAN_US", cfs_wakeup_gran_ns, 0, 1000000),
	TUN("JIFFY_EEVDF_SLICE_US", eevdf_slice_ns, 1, 1000000),
	TUN("JIFFY_CENTRAL_SLO_US", central_slo_ns, 1, 1000000000),
	TUN("JIFFY_LCBE_BE_QUANTUM_US", lcbe_be_quantum_ns, 0, 1000000),
#undef TUN
};

int jf_config_validate(const struct jf_config *cfg, char *err, size_t errlen)
{
	if (cfg->workers < 1 || cfg->workers > JF_MAX_WORKERS)
		return jf_errf(err, errlen, "workers = %u: must be between 1 and %d", cfg->workers,
			    JF_MAX_WORKERS);
	if (cfg->stack_size < MIN_STACK || cfg->stack_size > MAX_STACK)
		return jf_errf(err, errlen, "stack_size = %zu: must be between %u and %llu bytes",
			    cfg->stack_size, MIN_STACK, MAX_STACK);
	if (cfg->spin_ns > MAX_SPIN_US * 1000u)
		return jf_errf(err, errlen, "spin_ns = %" PRIu64 ": must be at most %llu (10 s)",
			    cfg->spin_ns, MAX_SPIN_US * 1000u);
	if (cfg->spin_max_ns > MAX_SPIN_US * 1000u)
		return jf_errf(err, errlen, "spin_max_ns = %" PRIu64 ": must be at most %llu (10 s)",
			    cfg->spin_max_ns, MAX_SPIN_US * 1000u);
	if (cfg->spin_max_ns && cfg->spin_max_ns < cfg->spin_ns)
		return jf_errf(err, errlen,
			    "spin_max_ns = %" PRIu64 ": must be 0 (no adaptation) or at least "
			    "spin_ns (%" PRIu64 ")", cfg->spin_max_ns, cfg->spin_ns);
	if (cfg->netpoll_ns > 1000000000ull)
		return jf_errf(err, errlen, "netpoll_ns = %" PRIu64 ": must be at most 1 s",
			    cfg->netpoll_ns);
	if (cfg->schedtrace_ns && (cfg->schedtrace_ns < 1000000 || cfg->schedtrace_ns > 3600000000000ull))
		return jf_errf(err, errlen,
			    "schedtrace_ns = %" PRIu64 ": must be 0 (off) or between 1 ms and 1 h",
			    cfg->schedtrace_ns);
	if (cfg->stall_report > 1000000)
		return jf_errf(err, errlen, "stall_report = %u: must be 0 (off) or a number of quanta "
			    "up to 1000000", cfg->stall_report);
	if (cfg->stall_report && cfg->preempt_signal == SIGRTMIN + 2)
		return jf_errf(err, errlen, "preempt_signal = SIGRTMIN+2: the stall report "
			    "(JIFFY_STALL_REPORT) uses that signal; choose another");
	if (cfg->stack_cache > 65536)
		return jf_errf(err, errlen, "stack_cache = %u: must be at most 65536", cfg->stack_cache);
	if (memchr(cfg->policy, '\0', sizeof(cfg->policy)) == NULL || cfg->policy[0] == '\0')
		return jf_errf(err, errlen, "policy: must be a non-empty name");
	if (cfg->quantum_ns != JF_QUANTUM_DEFAULT &&
	    (cfg->quantum_ns < 1000 || cfg->quantum_ns > 1000000000ull))
		return jf_errf(err, errlen, "quantum_ns = %" PRIu64 ": must be between 1 us and 1 s",
			    cfg->quantum_ns);
	if (cfg->grace_ns != JF_GRACE_DEFAULT && cfg->grace_ns > 1000000000ull)
		return jf_errf(err, errlen, "grace_ns = %" PRIu64 ": must be at most 1 s", cfg->grace_ns);
	if (cfg->preempt_signal < 1 || cfg->preempt_signal > SIGRTMAX ||
	    cfg->preempt_signal == SIGKILL || cfg->preempt_signal == SIGSTOP ||
	    cfg->preempt_signal == SIGSEGV || cfg->preempt_signal == SIGBUS)
		return jf_errf(err, errlen,
			    "preempt_signal = %d: must be a catchable signal other than SIGSEGV and "
			    "SIGBUS (Jiffy reports stack overflows with those)",
			    cfg->preempt_signal);
	if (memchr(cfg->preempt, '\0', sizeof(cfg->preempt)) == NULL ||
	    jf_preempt_available(cfg->preempt, NULL, 0) < 0)
		return jf_errf(err, errlen,
			    "preempt = '%.*s': unknown mechanism; known: " JF_PREEMPT_KNOWN,
			    (int)sizeof(cfg->preempt), cfg->preempt);
	for (size_t i = 0; i < sizeof(us_tunables) / sizeof(us_tunables[0]); i++) {
		uint64_t v = *(const uint64_t *)((const char *)cfg + us_tunables[i].off);
		if (v < us_tunables[i].min_us * 1000u || v > us_tunables[i].max_us * 1000u)
			return jf_errf(err, errlen, "sched.%s = %" PRIu64 " ns: must be between %" PRIu64
				    " and %" PRIu64 " us (%s)", us_tunables[i].name + 6, v,
				    us_tunables[i].min_us, us_tunables[i].max_us, us_tunables[i].name);
	}
	if (!jf_policy_find(cfg->policy)) {
		char names[256];
		jf_policy_names(names, sizeof(names));
		return jf_errf(err, errlen, "policy '%s' is unknown; available: %s", cfg->policy,
			    names);
	}
	return 0;
}

/* One entry per variable: its name and how it applies to a config. */
typedef int (*env_apply_fn)(struct jf_config *c, const char *name, const char *v, char *err,
			    size_t errlen);

static int env_workers(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, false, &x) || x < 1 || x > JF_MAX_WORKERS)
		return jf_errf(e, el, "%s='%s': expected a number of workers from 1 to %d", n, v,
			    JF_MAX_WORKERS);
	c->workers = (unsigned)x;
	return 0;
}

static int env_pin(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	if (parse_bool(v, &c->pin_workers))
		return jf_errf(e, el, "%s='%s': expected 0 or 1", n, v);
	return 0;
}

static int env_stats(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	if (parse_bool(v, &c->stats))
		return jf_errf(e, el, "%s='%s': expected 0 or 1", n, v);
	return 0;
}

static int env_timer_spin(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	if (parse_bool(v, &c->timer_spin))
		return jf_errf(e, el, "%s='%s': expected 0 or 1", n, v);
	return 0;
}

static int env_preempt_skip(struct jf_config *c, const char *n, const char *v, char *e,
			    size_t el)
{
	if (parse_bool(v, &c->preempt_skip))
		return jf_errf(e, el, "%s='%s': expected 0 or 1", n, v);
	return 0;
}

static int env_pthread_shim(struct jf_config *c, const char *n, const char *v, char *e,
			    size_t el)
{
	if (parse_bool(v, &c->pthread_shim))
		return jf_errf(e, el, "%s='%s': expected 0 or 1", n, v);
	return 0;
}

static int env_policy(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	char names[256];
	if (!v[0] || strlen(v) >= sizeof(c->policy) || !jf_policy_find(v)) {
		jf_policy_names(names, sizeof(names));
		return jf_errf(e, el, "%s='%s': unknown policy; available: %s", n, v, names);
	}
	snprintf(c->policy, sizeof(c->policy), "%s", v);
	return 0;
}

static int env_stack(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, true, &x) || x < MIN_STACK || x > MAX_STACK)
		return jf_errf(e, el, "%s='%s': expected a size from 16K to 1G (suffix K, M or G)", n,
			    v);
	c->stack_size = (size_t)x;
	return 0;
}

static int env_cache(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, false, &x) || x > 65536)
		return jf_errf(e, el, "%s='%s': expected a number of stacks from 0 to 65536", n, v);
	c->stack_cache = (unsigned)x;
	return 0;
}

static int env_spin(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, false, &x) || x > MAX_SPIN_US)
		return jf_errf(e, el, "%s='%s': expected microseconds from 0 to %llu", n, v,
			    MAX_SPIN_US);
	c->spin_ns = x * 1000u;
	return 0;
}

static int env_spin_max(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, false, &x) || x > MAX_SPIN_US)
		return jf_errf(e, el, "%s='%s': expected microseconds from 0 (no adaptation) to %llu",
			    n, v, MAX_SPIN_US);
	c->spin_max_ns = x * 1000u;
	return 0;
}

static int env_netpoll(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, false, &x) || x > 1000000)
		return jf_errf(e, el, "%s='%s': expected microseconds from 0 to 1000000", n, v);
	c->netpoll_ns = x * 1000u;
	return 0;
}

static int env_schedtrace(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, false, &x) || x > 3600000)
		return jf_errf(e, el, "%s='%s': expected a period in milliseconds from 1 to 3600000, "
			    "or 0 (off)", n, v);
	c->schedtrace_ns = x * 1000000u;
	return 0;
}

static int env_stall(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, false, &x) || x > 1000000)
		return jf_errf(e, el, "%s='%s': expected a number of quanta from 1 to 1000000 (a "
			    "uthread running longer while work waits is reported), or 0 (off)", n, v);
	c->stall_report = (unsigned)x;
	return 0;
}

static int env_preempt(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	if (strlen(v) >= sizeof(c->preempt) || jf_preempt_available(v, NULL, 0) < 0)
		return jf_errf(e, el,
			    "%s='%s': unknown mechanism; known: " JF_PREEMPT_KNOWN,
			    n, v);
	snprintf(c->preempt, sizeof(c->preempt), "%s", v);
	return 0;
}

static int env_quantum(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, false, &x) || x < 1 || x > 1000000)
		return jf_errf(e, el, "%s='%s': expected microseconds from 1 to 1000000", n, v);
	c->quantum_ns = x * 1000u;
	return 0;
}

static int env_grace(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (parse_u64(v, false, &x) || x > 1000000)
		return jf_errf(e, el, "%s='%s': expected microseconds from 0 to 1000000", n, v);
	c->grace_ns = x * 1000u;
	return 0;
}

/* A signal by number ("23"), name ("SIGURG", "URG") or real-time offset ("SIGRTMIN+3"). */
static int env_signal(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"URG", SIGURG},   {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"ALRM", SIGALRM},
		     {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"IO", SIGIO},   {"WINCH", SIGWINCH}};
	const char *s = v;
	uint64_t x;
	int sig = -1;

	if (!strncmp(s, "SIG", 3))
		s += 3;
	if (!parse_u64(v, false, &x) && x < 1024) {
		sig = (int)x;
	} else if (!strncmp(s, "RTMIN", 5)) {
		sig = SIGRTMIN;
		if (s[5] == '+' && !parse_u64(s + 6, false, &x) && x <= 32)
			sig += (int)x;
		else if (s[5] != '\0')
			sig = -1;
	} else {
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(s, names[i].name))
				sig = names[i].sig;
	}
	if (sig < 1 || sig > SIGRTMAX || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV ||
	    sig == SIGBUS)
		return jf_errf(e, el,
			    "%s='%s': expected a catchable signal (SIGURG, SIGUSR1, SIGRTMIN+3, 23, "
			    "...) other than SIGSEGV/SIGBUS",
			    n, v);
	c->preempt_signal = sig;
	return 0;
}

static int env_us_tunable(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	for (size_t i = 0; i < sizeof(us_tunables) / sizeof(us_tunables[0]); i++) {
		uint64_t x;
		if (strcmp(n, us_tunables[i].name))
			continue;
		if (parse_u64(v, false, &x) || x < us_tunables[i].min_us || x > us_tunables[i].max_us)
			return jf_errf(e, el, "%s='%s': expected microseconds from %" PRIu64 " to %" PRIu64,
				    n, v, us_tunables[i].min_us, us_tunables[i].max_us);
		*(uint64_t *)((char *)c + us_tunables[i].off) = x * 1000u;
		return 0;
	}
	return jf_errf(e, el, "%s: not a tunable", n);
}

static int env_central(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	if (!strcmp(v, "sq") || !strcmp(v, "mq")) {
		c->sched.central_mq = v[0] == 'm';
		return 0;
	}
	return jf_errf(e, el, "%s='%s': expected 'sq' (one queue) or 'mq' (one per request type)", n,
		    v);
}

static int env_central_pre(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	if (!strcmp(v, "head") || !strcmp(v, "tail")) {
		c->sched.central_head = v[0] == 'h';
		return 0;
	}
	return jf_errf(e, el, "%s='%s': expected 'head' or 'tail'", n, v);
}

/* Read by clock.c at first use; validated here so a typo is still reported. */
static int env_clock(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	(void)c;
	if (strcmp(v, "tsc") && strcmp(v, "monotonic"))
		return jf_errf(e, el, "%s='%s': expected 'tsc' or 'monotonic'", n, v);
	return 0;
}

static const struct {
	const char *name;
	env_apply_fn apply;
} env_vars[] = {
	{"JIFFY_WORKERS", env_workers},   {"JIFFY_PIN", env_pin},
	{"JIFFY_POLICY", env_policy},     {"JIFFY_STACK_SIZE", env_stack},
	{"JIFFY_STACK_CACHE", env_cache}, {"JIFFY_SPIN_US", env_spin},
	{"JIFFY_SPIN_MAX_US", env_spin_max},
	{"JIFFY_STATS", env_stats},       {"JIFFY_CLOCK", env_clock},
	{"JIFFY_PREEMPT", env_preempt},   {"JIFFY_QUANTUM_US", env_quantum},
	{"JIFFY_GRACE_US", env_grace},    {"JIFFY_PREEMPT_SIGNAL", env_signal},
	{"JIFFY_TIMER_SPIN", env_timer_spin},  {"JIFFY_NETPOLL_US", env_netpoll},
	{"JIFFY_PREEMPT_SKIP", env_preempt_skip},
	{"JIFFY_PTHREAD_SHIM", env_pthread_shim},
	{"JIFFY_SCHEDTRACE", env_schedtrace},        {"JIFFY_STALL_REPORT", env_stall},
	{"JIFFY_RR_SLICE_US", env_us_tunable},       {"JIFFY_TWOQ_LONG_US", env_us_tunable},
	{"JIFFY_CFS_LATENCY_US", env_us_tunable},    {"JIFFY_CFS_MIN_GRAN_US", env_us_tunable},
	{"JIFFY_CFS_WAKEUP_GRAN_US", env_us_tunable}, {"JIFFY_EEVDF_SLICE_US", env_us_tunable},
	{"JIFFY_CENTRAL", env_central},              {"JIFFY_CENTRAL_PREEMPTED", env_central_pre},
	{"JIFFY_CENTRAL_SLO_US", env_us_tunable},    {"JIFFY_LCBE_BE_QUANTUM_US", env_us_tunable},
};

int jf_config_apply_env(struct jf_config *cfg, char *err, size_t errlen)
{
	struct jf_config tmp = *cfg;

	for (char **ep = environ; ep && *ep; ep++) {
		const char *eq = strchr(*ep, '=');
		size_t len;
		bool known = false;

		if (strncmp(*ep, "JIFFY_", 6) != 0 || !eq)
			continue;
		len = (size_t)(eq - *ep);
		for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
			if (strlen(env_vars[i].name) == len && !strncmp(*ep, env_vars[i].name, len)) {
				int rc = env_vars[i].apply(&tmp, env_vars[i].name, eq + 1, err,
							   errlen);
				if (rc)
					return rc;
				known = true;
				break;
			}
		}
		if (!known) {
			char names[1024] = "";
			for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
				strncat(names, env_vars[i].name, sizeof(names) - strlen(names) - 3);
				if (i + 1 < sizeof(env_vars) / sizeof(env_vars[0]))
					strncat(names, ", ", sizeof(names) - strlen(names) - 1);
			}
			return jf_errf(err, errlen, "%s: unknown variable; known: %s", *ep, names);
		}
	}
	*cfg = tmp;
	return 0;
}

void jf_config_print(const struct jf_config *cfg, FILE *out)
{
	fprintf(out, "workers = %u\n", cfg->workers);
	fprintf(out, "pin_workers = %d\n", cfg->pin_workers);
	fprintf(out, "policy = %s\n", cfg->policy);
	fprintf(out, "stack_size = %zu\n", cfg->stack_size);
	fprintf(out, "stack_cache = %u\n", cfg->stack_cache);
	fprintf(out, "spin_us = %" PRIu64 "\n", cfg->spin_ns / 1000u);
	fprintf(out, "spin_max_us = %" PRIu64 "\n", cfg->spin_max_ns / 1000u);
	fprintf(out, "clock = %s (%" PRIu64 " Hz)\n", jf_clock_source(), jf_tsc_hz());
	fprintf(out, "preempt = %s\n", cfg->preempt);
	if (cfg->quantum_ns == JF_QUANTUM_DEFAULT)
		fprintf(out, "quantum_us = default\n");
	else
		fprintf(out, "quantum_us = %" PRIu64 "\n", cfg->quantum_ns / 1000u);
	if (cfg->grace_ns == JF_GRACE_DEFAULT)
		fprintf(out, "grace_us = default\n");
	else
		fprintf(out, "grace_us = %" PRIu64 "\n", cfg->grace_ns / 1000u);
	fprintf(out, "preempt_signal = %d\n", cfg->preempt_signal);
	fprintf(out, "timer_spin = %d\n", cfg->timer_spin);
	fprintf(out, "preempt_skip = %d\n", cfg->preempt_skip);
	fprintf(out, "pthread_shim = %d\n", cfg->pthread_shim);
	fprintf(out, "netpoll_us = %" PRIu64 "\n", cfg->netpoll_ns / 1000u);
	fprintf(out, "schedtrace_ms = %" PRIu64 "\n", cfg->schedtrace_ns / 1000000u);
	fprintf(out, "stall_report = %u\n", cfg->stall_report);
	for (size_t i = 0; i < sizeof(us_tunables) / sizeof(us_tunables[0]); i++)
		fprintf(out, "%s = %" PRIu64 "\n", us_tunables[i].name + 6,
			*(const uint64_t *)((const char *)cfg + us_tunables[i].off) / 1000u);
	fprintf(out, "central = %s\n", cfg->sched.central_mq ? "mq" : "sq");
	fprintf(out, "central_preempted = %s\n", cfg->sched.central_head ? "head" : "tail");
}
