/*
 * config.c - defaults, JIFFY_* environment overrides and validation of struct jf_config.
 *
 * Owns: the only place configuration is parsed. Every variable of the runtime is listed in
 * env_vars[]; the policies' parameters are not: each policy declares its own (struct
 * jf_policy_param), and JIFFY_<POLICY>_<NAME> is matched against those tables (params.c parses
 * the value). An unknown JIFFY_* variable or an unusable value is an error that names the
 * variable and the value.
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
#include "../common/parse.h"
#include "preempt/preempt.h"
#include "../sched/registry.h"
#include "runtime.h"

extern char **environ;

#define MIN_STACK (16u * 1024u)
#define MAX_STACK (1024ull * 1024u * 1024u)
#define MAX_SPIN_US (10ull * 1000u * 1000u)
#define MAX_BLOCKING_THREADS 1024u
#define MAX_BLOCKING_QUEUE (1024u * 1024u)
#define MAX_BLOCKING_IDLE_MS (3600ull * 1000u)
#define MAX_BLOCKING_SPIN_US 10000ull

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
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
	 * no kernel entry); code without them by a signal a grace period (5 ms) later, ~2 % (a
	 * signal costs 19-45 us on a KVM guest). docs/preemption.md, "The default".
	 */
	snprintf(cfg->preempt, sizeof(cfg->preempt), "%s", "auto");
	cfg->quantum_ns = JF_QUANTUM_DEFAULT; /* the mechanism's own: auto 20 us, timer 100 us */
	cfg->grace_ns = JF_GRACE_DEFAULT; /* the mechanism's own: hybrid 50 us, auto 5 ms */
	cfg->preempt_signal = SIGURG;
	cfg->pfn_signal = SIGRTMIN + 4;
	cfg->netpoll_ns = 5 * 1000; /* see docs/netpoll.md */
	cfg->preempt_skip = true;
	cfg->pthread_shim = true;
	cfg->clock = JF_CLOCK_TSC;
	cfg->blocking_threads = 8;            /* docs/blocking.md, "Pool sizing" */
	cfg->blocking_queue = 256;
	cfg->blocking_idle_ns = 10000000000ull; /* 10 s, as Tokio's blocking threads */
	cfg->blocking_spin_ns = 20 * 1000;       /* docs/blocking.md, "Costs" */
	cfg->lock_defer_ns = JF_LOCK_DEFER_DEFAULT_NS; /* docs/sync.md, "Lock-holder preemption" */
	cfg->lock_spin_ns = JF_LOCK_SPIN_DEFAULT_NS;
}

/* --- the policies' parameters (struct jf_config_param) --------------------------------------- */

/* Whether @c names @policy's parameter @name (bounded: the struct may come filled by hand). */
static bool param_is(const struct jf_config_param *c, const char *policy, const char *name)
{
	return !strncmp(c->policy, policy, sizeof(c->policy)) &&
	       !strncmp(c->name, name, sizeof(c->name));
}

static struct jf_config_param *param_slot(struct jf_config *c, const char *policy,
					  const char *name)
{
	for (unsigned i = 0; i < c->nparams && i < JF_CONFIG_PARAMS_MAX; i++)
		if (param_is(&c->params[i], policy, name))
			return &c->params[i];
	return NULL;
}

/* Set @ops's parameter @i from @text; @label names it in messages (a variable, "rr.slice_us"). */
static int param_set_at(struct jf_config *c, const struct jf_policy_ops *ops, int i,
			const char *text, const char *label, char *err, size_t errlen)
{
	const struct jf_policy_param *p = &ops->params[i];
	struct jf_config_param *slot;
	char why[320];
	uint64_t v;

	if (jf_policy_param_parse(p, text, &v, why, sizeof(why)))
		return jf_errf(err, errlen, "%s=%s", label, why);
	if (strlen(ops->name) >= JF_POLICY_NAME_MAX)
		return jf_errf(err, errlen, "%s: the policy's name '%s' is longer than %d bytes",
			    label, ops->name, JF_POLICY_NAME_MAX - 1);
	slot = param_slot(c, ops->name, p->name);
	if (!slot) {
		if (c->nparams >= JF_CONFIG_PARAMS_MAX) {
			jf_errf(err, errlen, "%s: more than %d policy parameters set", label,
				JF_CONFIG_PARAMS_MAX);
			return -ENOSPC;
		}
		slot = &c->params[c->nparams++];
		memset(slot, 0, sizeof(*slot));
		snprintf(slot->policy, sizeof(slot->policy), "%s", ops->name);
		snprintf(slot->name, sizeof(slot->name), "%s", p->name);
	}
	slot->value = v;
	return 0;
}

/* @ops and @name's index in its table, or -EINVAL with a message listing what there is. */
static int param_lookup(const char *policy, const char *name, const struct jf_policy_ops **ops,
			char *err, size_t errlen)
{
	char names[256];
	int i;

	*ops = policy ? jf_policy_find(policy) : NULL;
	if (!*ops) {
		jf_policy_names(names, sizeof(names));
		return jf_errf(err, errlen, "policy '%s' is unknown; available: %s",
			    policy ? policy : "(null)", names);
	}
	i = jf_policy_param_index(*ops, name);
	if (i < 0) {
		jf_policy_param_names(*ops, names, sizeof(names));
		return jf_errf(err, errlen, "%s.%s: policy %s has no such parameter; its "
			    "parameters: %s", policy, name ? name : "(null)", policy, names);
	}
	return i;
}

int jf_config_set_param(struct jf_config *cfg, const char *policy, const char *name,
			const char *value, char *err, size_t errlen)
{
	const struct jf_policy_ops *ops;
	char label[JF_POLICY_NAME_MAX + JF_PARAM_NAME_MAX + 2];
	int i = param_lookup(policy, name, &ops, err, errlen);

	if (i < 0)
		return i;
	snprintf(label, sizeof(label), "%s.%s", policy, name);
	return param_set_at(cfg, ops, i, value, label, err, errlen);
}

int jf_config_get_param(const struct jf_config *cfg, const char *policy, const char *name,
			uint64_t *value)
{
	const struct jf_policy_ops *ops;
	int i = param_lookup(policy, name, &ops, NULL, 0);

	if (i < 0)
		return -ENOENT;
	*value = ops->params[i].def;
	for (unsigned k = 0; k < cfg->nparams && k < JF_CONFIG_PARAMS_MAX; k++)
		if (param_is(&cfg->params[k], ops->name, name))
			*value = cfg->params[k].value;
	return 0;
}

void jf_config_policy_params(const struct jf_config *cfg, const struct jf_policy_ops *ops,
			     struct jf_policy_params *params)
{
	jf_policy_params_default(ops, params);
	params->quantum_ns = cfg->quantum_ns;
	for (unsigned k = 0; k < cfg->nparams && k < JF_CONFIG_PARAMS_MAX; k++)
		for (size_t i = 0; i < ops->nparams && i < JF_POLICY_PARAMS_MAX; i++)
			if (param_is(&cfg->params[k], ops->name, ops->params[i].name))
				params->value[i] = cfg->params[k].value;
}

/* Every parameter set names a known policy and one of its parameters, with a value in range. */
static int validate_params(const struct jf_config *cfg, char *err, size_t errlen)
{
	if (cfg->nparams > JF_CONFIG_PARAMS_MAX)
		return jf_errf(err, errlen, "nparams = %u: must be at most %d", cfg->nparams,
			    JF_CONFIG_PARAMS_MAX);
	for (unsigned k = 0; k < cfg->nparams; k++) {
		const struct jf_config_param *c = &cfg->params[k];
		const struct jf_policy_ops *ops;
		char why[320];
		int i;

		if (!memchr(c->policy, '\0', sizeof(c->policy)) ||
		    !memchr(c->name, '\0', sizeof(c->name)))
			return jf_errf(err, errlen, "params[%u]: a name without its terminating NUL", k);
		i = param_lookup(c->policy, c->name, &ops, why, sizeof(why));
		if (i < 0)
			return jf_errf(err, errlen, "params[%u]: %s", k, why);
		if (jf_policy_param_check_value(&ops->params[i], c->value, why, sizeof(why)))
			return jf_errf(err, errlen, "params[%u]: %s.%s=%s", k, c->policy, c->name,
				    why);
	}
	return 0;
}

/* A signal Jiffy may take for itself: catchable, and not one of the stack overflow report's. */
static bool catchable(int sig)
{
	return sig >= 1 && sig <= SIGRTMAX && sig != SIGKILL && sig != SIGSTOP && sig != SIGSEGV &&
	       sig != SIGBUS;
}

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
	if (cfg->netpoll_irq && !strncmp(cfg->preempt, "none", sizeof(cfg->preempt)))
		return jf_errf(err, errlen,
			    "netpoll_irq = 1 (JIFFY_NETPOLL_IRQ) with preempt = none: readiness is "
			    "delivered to a busy worker through its preemption mechanism; choose one "
			    "(JIFFY_PREEMPT=auto, deadline, timer, ...) or netpoll_irq = 0");
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
	if (!catchable(cfg->preempt_signal))
		return jf_errf(err, errlen,
			    "preempt_signal = %d: must be a catchable signal other than SIGSEGV and "
			    "SIGBUS (Jiffy reports stack overflows with those)",
			    cfg->preempt_signal);
	if (!catchable(cfg->pfn_signal) || cfg->pfn_signal == cfg->preempt_signal)
		return jf_errf(err, errlen,
			    "pfn_signal = %d: must be a catchable signal other than SIGSEGV, SIGBUS "
			    "and preempt_signal (%d)",
			    cfg->pfn_signal, cfg->preempt_signal);
	if (cfg->stall_report && cfg->pfn_signal == SIGRTMIN + 2)
		return jf_errf(err, errlen, "pfn_signal = SIGRTMIN+2: the stall report "
			    "(JIFFY_STALL_REPORT) uses that signal; choose another");
	if (memchr(cfg->preempt, '\0', sizeof(cfg->preempt)) == NULL ||
	    jf_preempt_available(cfg->preempt, NULL, 0) < 0)
		return jf_errf(err, errlen,
			    "preempt = '%.*s': unknown mechanism; known: " JF_PREEMPT_KNOWN,
			    (int)sizeof(cfg->preempt), cfg->preempt);
	if (cfg->lock_defer_ns > 10000000ull)
		return jf_errf(err, errlen, "lock_defer_ns = %" PRIu64 ": must be at most 10 ms",
			    cfg->lock_defer_ns);
	if (cfg->lock_spin_ns > 1000000ull)
		return jf_errf(err, errlen, "lock_spin_ns = %" PRIu64 ": must be at most 1 ms",
			    cfg->lock_spin_ns);
	if ((unsigned)cfg->clock >= JF_CLOCK_NR_KINDS)
		return jf_errf(err, errlen, "clock = %d: must be JF_CLOCK_TSC or JF_CLOCK_MONOTONIC",
			    (int)cfg->clock);
	if (cfg->blocking_threads < 1 || cfg->blocking_threads > MAX_BLOCKING_THREADS)
		return jf_errf(err, errlen, "blocking_threads = %u: must be between 1 and %u",
			    cfg->blocking_threads, MAX_BLOCKING_THREADS);
	if (cfg->blocking_queue < 1 || cfg->blocking_queue > MAX_BLOCKING_QUEUE)
		return jf_errf(err, errlen, "blocking_queue = %u: must be between 1 and %u",
			    cfg->blocking_queue, MAX_BLOCKING_QUEUE);
	if (cfg->blocking_idle_ns > MAX_BLOCKING_IDLE_MS * 1000000ull)
		return jf_errf(err, errlen, "blocking_idle_ns = %" PRIu64 ": must be at most 1 h",
			    cfg->blocking_idle_ns);
	if (cfg->blocking_spin_ns > MAX_BLOCKING_SPIN_US * 1000u)
		return jf_errf(err, errlen, "blocking_spin_ns = %" PRIu64 ": must be at most 10 ms",
			    cfg->blocking_spin_ns);
	if (validate_params(cfg, err, errlen))
		return -EINVAL;
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
	if (jf_parse_u64(v, false, &x) || x < 1 || x > JF_MAX_WORKERS)
		return jf_errf(e, el, "%s='%s': expected a number of workers from 1 to %d", n, v,
			    JF_MAX_WORKERS);
	c->workers = (unsigned)x;
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
	if (jf_parse_u64(v, true, &x) || x < MIN_STACK || x > MAX_STACK)
		return jf_errf(e, el, "%s='%s': expected a size from 16K to 1G (suffix K, M or G)", n,
			    v);
	c->stack_size = (size_t)x;
	return 0;
}

static int env_cache(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (jf_parse_u64(v, false, &x) || x > 65536)
		return jf_errf(e, el, "%s='%s': expected a number of stacks from 0 to 65536", n, v);
	c->stack_cache = (unsigned)x;
	return 0;
}


static int env_spin_max(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (jf_parse_u64(v, false, &x) || x > MAX_SPIN_US)
		return jf_errf(e, el, "%s='%s': expected microseconds from 0 (no adaptation) to %llu",
			    n, v, MAX_SPIN_US);
	c->spin_max_ns = x * 1000u;
	return 0;
}



static int env_schedtrace(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (jf_parse_u64(v, false, &x) || x > 3600000)
		return jf_errf(e, el, "%s='%s': expected a period in milliseconds from 1 to 3600000, "
			    "or 0 (off)", n, v);
	c->schedtrace_ns = x * 1000000u;
	return 0;
}

static int env_stall(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	uint64_t x;
	if (jf_parse_u64(v, false, &x) || x > 1000000)
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



/* A signal by number ("23"), name ("SIGURG", "URG") or real-time offset ("SIGRTMIN+3"). */
static int parse_signal(int *out, const char *n, const char *v, char *e, size_t el)
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
	if (!jf_parse_u64(v, false, &x) && x < 1024) {
		sig = (int)x;
	} else if (!strncmp(s, "RTMIN", 5)) {
		sig = SIGRTMIN;
		if (s[5] == '+' && !jf_parse_u64(s + 6, false, &x) && x <= 32)
			sig += (int)x;
		else if (s[5] != '\0')
			sig = -1;
	} else {
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(s, names[i].name))
				sig = names[i].sig;
	}
	if (!catchable(sig))
		return jf_errf(e, el,
			    "%s='%s': expected a catchable signal (SIGURG, SIGUSR1, SIGRTMIN+3, 23, "
			    "...) other than SIGSEGV/SIGBUS",
			    n, v);
	*out = sig;
	return 0;
}

static int env_signal(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	return parse_signal(&c->preempt_signal, n, v, e, el);
}

static int env_pfn_signal(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	return parse_signal(&c->pfn_signal, n, v, e, el);
}




static const char *const clock_names[JF_CLOCK_NR_KINDS] = {"tsc", "monotonic"};

static int env_clock(struct jf_config *c, const char *n, const char *v, char *e, size_t el)
{
	for (int k = 0; k < JF_CLOCK_NR_KINDS; k++)
		if (!strcmp(v, clock_names[k])) {
			c->clock = (enum jf_clock_kind)k;
			return 0;
		}
	return jf_errf(e, el, "%s='%s': expected 'tsc' or 'monotonic'", n, v);
}

static int env_blocking_threads(struct jf_config *c, const char *n, const char *v, char *e,
				size_t el)
{
	uint64_t x;
	if (jf_parse_u64(v, false, &x) || x < 1 || x > MAX_BLOCKING_THREADS)
		return jf_errf(e, el, "%s='%s': expected a number of threads from 1 to %u", n, v,
			    MAX_BLOCKING_THREADS);
	c->blocking_threads = (unsigned)x;
	return 0;
}

static int env_blocking_queue(struct jf_config *c, const char *n, const char *v, char *e,
			      size_t el)
{
	uint64_t x;
	if (jf_parse_u64(v, false, &x) || x < 1 || x > MAX_BLOCKING_QUEUE)
		return jf_errf(e, el, "%s='%s': expected a number of queued calls from 1 to %u", n,
			    v, MAX_BLOCKING_QUEUE);
	c->blocking_queue = (unsigned)x;
	return 0;
}

static int env_blocking_idle(struct jf_config *c, const char *n, const char *v, char *e,
			     size_t el)
{
	uint64_t x;
	if (jf_parse_u64(v, false, &x) || x > MAX_BLOCKING_IDLE_MS)
		return jf_errf(e, el, "%s='%s': expected milliseconds from 0 to %llu (1 h)", n, v,
			    MAX_BLOCKING_IDLE_MS);
	c->blocking_idle_ns = x * 1000000u;
	return 0;
}


/*
 * One entry per variable. The plain ones are data: a 0/1 flag (ENV_BOOL) or a duration written
 * in microseconds and kept in nanoseconds (ENV_US, within [min, max] us), at @off in struct
 * jf_config; the others have their own parser (ENV_FN, @apply).
 */
enum env_kind { ENV_FN, ENV_BOOL, ENV_US };

static const struct env_var {
	const char *name;
	env_apply_fn apply;
	enum env_kind kind;
	size_t off;
	uint64_t min, max;
} env_vars[] = {
#define ENV_BOOL_AT(var, field) {var, NULL, ENV_BOOL, offsetof(struct jf_config, field), 0, 1}
#define ENV_US_AT(var, field, lo, hi)                                                              \
	{var, NULL, ENV_US, offsetof(struct jf_config, field), lo, hi}
	{"JIFFY_WORKERS", env_workers, ENV_FN, 0, 0, 0},
	ENV_BOOL_AT("JIFFY_PIN", pin_workers),
	{"JIFFY_POLICY", env_policy, ENV_FN, 0, 0, 0},
	{"JIFFY_STACK_SIZE", env_stack, ENV_FN, 0, 0, 0},
	{"JIFFY_STACK_CACHE", env_cache, ENV_FN, 0, 0, 0},
	ENV_US_AT("JIFFY_SPIN_US", spin_ns, 0, MAX_SPIN_US),
	{"JIFFY_SPIN_MAX_US", env_spin_max, ENV_FN, 0, 0, 0},
	ENV_BOOL_AT("JIFFY_STATS", stats),
	ENV_BOOL_AT("JIFFY_HIST", histograms),
	{"JIFFY_CLOCK", env_clock, ENV_FN, 0, 0, 0},
	{"JIFFY_PREEMPT", env_preempt, ENV_FN, 0, 0, 0},
	ENV_US_AT("JIFFY_QUANTUM_US", quantum_ns, 1, 1000000),
	ENV_US_AT("JIFFY_GRACE_US", grace_ns, 0, 1000000),
	{"JIFFY_PREEMPT_SIGNAL", env_signal, ENV_FN, 0, 0, 0},
	{"JIFFY_PFN_SIGNAL", env_pfn_signal, ENV_FN, 0, 0, 0},
	ENV_BOOL_AT("JIFFY_TIMER_SPIN", timer_spin),
	ENV_US_AT("JIFFY_NETPOLL_US", netpoll_ns, 0, 1000000),
	ENV_BOOL_AT("JIFFY_PREEMPT_SKIP", preempt_skip),
	ENV_BOOL_AT("JIFFY_PTHREAD_SHIM", pthread_shim),
	{"JIFFY_SCHEDTRACE", env_schedtrace, ENV_FN, 0, 0, 0},
	{"JIFFY_STALL_REPORT", env_stall, ENV_FN, 0, 0, 0},
	{"JIFFY_BLOCKING_THREADS", env_blocking_threads, ENV_FN, 0, 0, 0},
	{"JIFFY_BLOCKING_QUEUE", env_blocking_queue, ENV_FN, 0, 0, 0},
	{"JIFFY_BLOCKING_IDLE_MS", env_blocking_idle, ENV_FN, 0, 0, 0},
	ENV_US_AT("JIFFY_BLOCKING_SPIN_US", blocking_spin_ns, 0, MAX_BLOCKING_SPIN_US),
	ENV_US_AT("JIFFY_LOCK_DEFER_US", lock_defer_ns, 0, 10000),
	ENV_US_AT("JIFFY_LOCK_SPIN_US", lock_spin_ns, 0, 1000),
	ENV_BOOL_AT("JIFFY_LOCK_HANDOFF", lock_handoff),
	ENV_BOOL_AT("JIFFY_NETPOLL_IRQ", netpoll_irq),
#undef ENV_BOOL_AT
#undef ENV_US_AT
};

/* Apply variable @ev = @v to @c (its parser, or the table's kind). */
static int env_apply(const struct env_var *ev, struct jf_config *c, const char *v, char *e,
		     size_t el)
{
	char *field = (char *)c + ev->off;
	uint64_t x;

	switch (ev->kind) {
	case ENV_BOOL:
		if (jf_parse_bool(v, (bool *)(void *)field))
			return jf_errf(e, el, "%s='%s': expected 0 or 1", ev->name, v);
		return 0;
	case ENV_US:
		if (jf_parse_u64(v, false, &x) || x < ev->min || x > ev->max)
			return jf_errf(e, el, "%s='%s': expected microseconds from %llu to %llu",
				    ev->name, v, (unsigned long long)ev->min,
				    (unsigned long long)ev->max);
		*(uint64_t *)(void *)field = x * 1000u;
		return 0;
	default:
		return ev->apply(c, ev->name, v, e, el);
	}
}

/*
 * The parameters the environment has set so far in one jf_config_apply_env(): a parameter set
 * by both its variable and its alias (JIFFY_CENTRAL_QUEUES and JIFFY_CENTRAL) is refused, since
 * which one wins would depend on the order of environ.
 */
struct env_seen {
	int n;
	struct {
		const struct jf_policy_param *param;
		const char *var; /* in environ: "NAME=value" */
	} set[JF_CONFIG_PARAMS_MAX];
};

/*
 * Whether JIFFY_* variable @var (@len bytes of it) sets a policy's parameter; if so, set it
 * (*@rc: 0 or -EINVAL).
 */
static bool env_param(struct jf_config *c, struct env_seen *seen, const char *var, size_t len,
		      const char *value, int *rc, char *err, size_t errlen)
{
	const struct jf_policy_ops *ops;
	char name[JF_POLICY_NAME_MAX + JF_PARAM_NAME_MAX + 8];

	for (int k = 0; (ops = jf_policy_at(k)) != NULL; k++) {
		for (size_t i = 0; i < ops->nparams && i < JF_POLICY_PARAMS_MAX; i++) {
			const struct jf_policy_param *p = &ops->params[i];
			size_t n = (size_t)jf_policy_param_env(ops->name, p, name, sizeof(name));

			if (!(n == len && !strncmp(var, name, len)) &&
			    !(p->env_alias && strlen(p->env_alias) == len &&
			      !strncmp(var, p->env_alias, len)))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)len, var);
			for (int j = 0; j < seen->n; j++)
				if (seen->set[j].param == p) {
					*rc = jf_errf(err, errlen, "%s and %.*s both set %s.%s: "
						   "give one", name,
						   (int)strcspn(seen->set[j].var, "="),
						   seen->set[j].var, ops->name, p->name);
					return true;
				}
			*rc = param_set_at(c, ops, (int)i, value, name, err, errlen) ? -EINVAL : 0;
			if (*rc == 0 && seen->n < JF_CONFIG_PARAMS_MAX) {
				seen->set[seen->n].param = p;
				seen->set[seen->n++].var = var;
			}
			return true;
		}
	}
	return false;
}

/*
 * @var is no variable: if it starts with a known policy's JIFFY_<POLICY>_, say which variables
 * that policy has (the longest such prefix: a misspelt parameter); else list the runtime's.
 */
static int env_unknown(const char *var, size_t len, char *err, size_t errlen)
{
	const struct jf_policy_ops *ops, *best = NULL;
	char prefix[JF_POLICY_NAME_MAX + 8], names[1024] = "";
	size_t best_len = 0, off = 0;

	for (int k = 0; (ops = jf_policy_at(k)) != NULL; k++) {
		size_t n = jf_policy_env_prefix(ops->name, prefix, sizeof(prefix));
		if (n < len && n > best_len && !strncmp(var, prefix, n))
			best = ops, best_len = n;
	}
	if (best && !best->nparams)
		return jf_errf(err, errlen, "%.*s: unknown variable; policy %s has no parameters",
			    (int)len, var, best->name);
	if (best) {
		for (size_t i = 0; i < best->nparams && off < sizeof(names); i++) {
			char env[JF_POLICY_NAME_MAX + JF_PARAM_NAME_MAX + 8];
			jf_policy_param_env(best->name, &best->params[i], env, sizeof(env));
			off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s",
						i ? ", " : "", env);
		}
		return jf_errf(err, errlen, "%.*s: unknown variable; policy %s's parameters are %s "
			    "(docs/policies.md)", (int)len, var, best->name, names);
	}
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]) && off < sizeof(names); i++)
		off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", i ? ", " : "",
					env_vars[i].name);
	return jf_errf(err, errlen, "%.*s: unknown variable; known: %s, and a policy's parameters "
		    "JIFFY_<POLICY>_<NAME> (docs/policies.md)", (int)len, var, names);
}

int jf_config_apply_env(struct jf_config *cfg, char *err, size_t errlen)
{
	struct jf_config tmp = *cfg;
	struct env_seen seen = {0};

	for (char **ep = environ; ep && *ep; ep++) {
		const char *eq = strchr(*ep, '=');
		size_t len;
		bool known = false;

		if (strncmp(*ep, "JIFFY_", 6) != 0 || !eq)
			continue;
		len = (size_t)(eq - *ep);
		for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
			if (strlen(env_vars[i].name) == len && !strncmp(*ep, env_vars[i].name, len)) {
				int rc = env_apply(&env_vars[i], &tmp, eq + 1, err, errlen);
				if (rc)
					return rc;
				known = true;
				break;
			}
		}
		if (!known) {
			int rc = 0;
			if (!env_param(&tmp, &seen, *ep, len, eq + 1, &rc, err, errlen))
				return env_unknown(*ep, len, err, errlen);
			if (rc)
				return rc;
		}
	}
	*cfg = tmp;
	return 0;
}

/*
 * The selected policy's parameters, every one ("rr.slice_us = 50"), then those set for other
 * policies, marked unused.
 */
static void print_params(const struct jf_config *cfg, FILE *out)
{
	const struct jf_policy_ops *ops = NULL, *other;
	char v[48];

	if (memchr(cfg->policy, '\0', sizeof(cfg->policy)))
		ops = jf_policy_find(cfg->policy);
	for (size_t i = 0; ops && i < ops->nparams; i++) {
		uint64_t x = ops->params[i].def;
		jf_config_get_param(cfg, ops->name, ops->params[i].name, &x);
		jf_policy_param_format(&ops->params[i], x, v, sizeof(v));
		fprintf(out, "%s.%s = %s\n", ops->name, ops->params[i].name, v);
	}
	for (unsigned k = 0; k < cfg->nparams && k < JF_CONFIG_PARAMS_MAX; k++) {
		const struct jf_config_param *c = &cfg->params[k];
		int i;

		if (!memchr(c->policy, '\0', sizeof(c->policy)) ||
		    !memchr(c->name, '\0', sizeof(c->name)) || (ops && !strcmp(c->policy, ops->name)))
			continue;
		other = jf_policy_find(c->policy);
		if (!other || (i = jf_policy_param_index(other, c->name)) < 0)
			continue;
		jf_policy_param_format(&other->params[i], c->value, v, sizeof(v));
		fprintf(out, "%s.%s = %s (policy %s is not selected: unused)\n", c->policy, c->name,
			v, c->policy);
	}
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
	fprintf(out, "clock = %s (in use: %s, %" PRIu64 " Hz)\n",
		(unsigned)cfg->clock < JF_CLOCK_NR_KINDS ? clock_names[cfg->clock] : "?",
		jf_clock_source(), jf_tsc_hz());
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
	fprintf(out, "pfn_signal = %d\n", cfg->pfn_signal);
	fprintf(out, "timer_spin = %d\n", cfg->timer_spin);
	fprintf(out, "preempt_skip = %d\n", cfg->preempt_skip);
	fprintf(out, "pthread_shim = %d\n", cfg->pthread_shim);
	fprintf(out, "netpoll_us = %" PRIu64 "\n", cfg->netpoll_ns / 1000u);
	fprintf(out, "netpoll_irq = %d\n", cfg->netpoll_irq);
	fprintf(out, "schedtrace_ms = %" PRIu64 "\n", cfg->schedtrace_ns / 1000000u);
	fprintf(out, "stall_report = %u\n", cfg->stall_report);
	fprintf(out, "blocking_threads = %u\n", cfg->blocking_threads);
	fprintf(out, "blocking_queue = %u\n", cfg->blocking_queue);
	fprintf(out, "blocking_idle_ms = %" PRIu64 "\n", cfg->blocking_idle_ns / 1000000u);
	fprintf(out, "blocking_spin_us = %" PRIu64 "\n", cfg->blocking_spin_ns / 1000u);
	fprintf(out, "lock_defer_us = %" PRIu64 "\n", cfg->lock_defer_ns / 1000u);
	fprintf(out, "lock_spin_us = %" PRIu64 "\n", cfg->lock_spin_ns / 1000u);
	fprintf(out, "lock_handoff = %d\n", cfg->lock_handoff);
	fprintf(out, "histograms = %d\n", cfg->histograms);
	print_params(cfg, out);
}
