/*
 * sim/sim.h - jiffy-sim, the discrete-event simulator that runs Jiffy's own policy code.
 *
 * Owns: the simulator's configuration (struct sim_config), its results (struct sim_result) and
 * the one entry point that runs a simulation, sim_run(), with the settings of the policy's
 * parameters (params.c). The command line (main.c), the reports (report.c) and the tests
 * (sim/tests/) are built on these; nothing else is shared.
 *
 * Model, in one paragraph (docs/simulator.md has the whole story): requests arrive (Poisson from
 * a seed, or a trace), each with a service time drawn from a distribution; every request is a
 * task handed to a Jiffy policy (src/sched/, the very object files the runtime links) through
 * struct jf_policy_ops, called through the runtime's own policy driver (src/sched/driver.h: the
 * order, the times and the stamps of src/runtime/thread.c and src/runtime/preempt/preempt.c; the
 * same one as tests/sched/policy_harness.h) but in virtual time.
 * Simulated workers run the tasks the policy hands them; a preemption mechanism interrupts a
 * worker at the due time of its run (slice op, the quantum by default) when the policy says
 * other work waits, at the costs of a cost model (struct sim_costs). "ps" is not a Jiffy policy
 * but the ideal processor-sharing model (ps.c), for comparison.
 *
 * Invariants: a run is a pure function of its configuration (same config and seed, same result,
 * byte for byte); nothing here reads a clock or the environment. Times are nanoseconds of
 * virtual time.
 */
#ifndef JIFFY_SIM_H
#define JIFFY_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jiffy/config.h>
#include <jiffy/policy.h>

#include "costs.h"
#include "dist.h"
#include "hist.h"

#define SIM_MAX_CORES JF_MAX_WORKERS
#define SIM_PARAMS_MAX 32     /* --param settings */
#define SIM_PARAM_TEXT_MAX 96 /* bytes of one, its NUL included */

/**
 * struct sim_tunables - the runtime's quantum and the policy parameters set; every other
 * parameter has its policy's default (its struct jf_policy_param table).
 * @quantum_ns: the runtime's quantum (jf_policy_params.quantum_ns, JIFFY_QUANTUM_US).
 * @nparams, @param: settings "[POLICY.]NAME=VALUE", added with sim_param_add(): VALUE as
 *              JIFFY_<POLICY>_<NAME> takes it (jf_policy_param_parse()). Without POLICY a
 *              setting is the simulated policy's; one for another policy is checked and unused.
 */
struct sim_tunables {
	uint64_t quantum_ns;
	int nparams;
	char param[SIM_PARAMS_MAX][SIM_PARAM_TEXT_MAX];
};

/**
 * struct sim_trace - a recorded arrival process: request i arrives at @at_ns[i] (non-decreasing,
 * from 0) and needs @service_ns[i] of CPU; @klass[i] indexes @class_names.
 */
struct sim_trace {
	size_t n;
	uint64_t *at_ns;
	uint64_t *service_ns;
	uint8_t *klass;
	int nclasses;
	char class_names[SIM_MAX_CLASSES][SIM_CLASS_NAME_MAX];
	double mean_service_ns;
	double rate; /* requests/s as recorded: (n - 1) / (at[n-1] - at[0]) */
};

/**
 * struct sim_config - one simulation. Fill with sim_config_default(), then set what differs.
 * @cores:        simulated workers (1..SIM_MAX_CORES).
 * @policy:       a Jiffy policy name (jf_policy_find()), or "ps" (ideal processor sharing).
 * @tun:          the runtime's quantum and the policy's parameters (struct sim_tunables).
 * @costs:        the preemption mechanism and what it costs (costs.h); preempt = false is
 *                "none": no run is ever interrupted.
 * @dist:         the service-time distribution (ignored with @trace).
 * @trace:        recorded arrivals, or NULL for Poisson arrivals at @rate.
 * @rate:         requests/s (Poisson); with @trace, > 0 rescales its inter-arrival times to
 *                this mean rate, 0 replays it as recorded.
 * @requests:     measured requests (after @warmup unmeasured ones).
 * @warmup:       requests simulated before the measured window.
 * @drain_ns:     after the window's end, how long measured requests may still finish; those that
 *                have not are lost (jiffy-load's --drain-ms).
 * @seed:         every random stream (arrivals, service, placement, blocking, the policy's own)
 *                derives from it.
 * @block_prob, @block_ns: a request blocks (I/O) with this probability, once, half-way through
 *                its service, for @block_ns; it is then woken (JF_ENQ_WOKEN).
 * @yield_every_ns: a request yields (JF_ENQ_YIELDED) after each @yield_every_ns of its own CPU
 *                time (0: never).
 * @slo_ns:       per class: attr.slo_ns of its tasks (central MQ); 0 none.
 * @arrival_worker: the worker whose queue receives every request (enqueue's caller, as a
 *                single receiver uthread spawning them would be); -1: a uniformly random one
 *                (RSS over many flows), the default.
 * @park_after_ns, @wake_ns: an idle worker parks after spinning @park_after_ns (0: it never
 *                parks) and a parked worker starts its next task @wake_ns late (a futex
 *                wake-up; ~20 us on the project's VM). Jiffy's JIFFY_SPIN_US.
 * @check:        conformance checks beyond the ones always made (docs/simulator.md): work
 *                conservation after every event (every policy but fifo) and, at the end, a
 *                drain in which every task must finish.
 */
struct sim_config {
	int cores;
	char policy[JF_POLICY_NAME_MAX];
	struct sim_tunables tun;
	struct sim_costs costs;
	const struct sim_dist *dist;
	const struct sim_trace *trace;
	double rate;
	uint64_t requests;
	uint64_t warmup;
	uint64_t drain_ns;
	uint64_t seed;
	double block_prob;
	uint64_t block_ns;
	uint64_t yield_every_ns;
	uint64_t slo_ns[SIM_MAX_CLASSES];
	int arrival_worker;
	uint64_t park_after_ns;
	uint64_t wake_ns;
	bool check;
};

/** struct sim_class - what is measured per request class (and overall). */
struct sim_class {
	struct sim_hist lat;  /* response time, ns (jiffy-load: latency) */
	struct sim_hist slow; /* slowdown (response / service) in thousandths */
	unsigned __int128 lat_sum_ns;
	uint64_t count;       /* measured requests: completed + lost */
	uint64_t completed;
	uint64_t lost;
	uint64_t scheduled;   /* measured requests that arrived (all of them: the window is theirs) */
	uint64_t done_in_window; /* completions (of any request) inside the window */
};

/**
 * struct sim_result - what a run measured. Fill by sim_run(); free with sim_result_free().
 * @window_ns:    length of the measured window (first measured arrival to the first arrival
 *                after it; jiffy-load's window).
 * @run_ns:       virtual time from the first arrival to the end of the run.
 * @sent, @received: requests that arrived / completed in the whole run.
 * @violation:    empty, or the first broken invariant (a policy bug, or a model bug).
 */
struct sim_result {
	int nclasses;
	struct sim_class cls[SIM_MAX_CLASSES];
	struct sim_class overall;
	uint64_t window_ns;
	uint64_t run_ns;
	uint64_t sent, received;
	/* mechanism and scheduling counters */
	uint64_t preempts;        /* runs interrupted and handed back to the policy */
	uint64_t preempt_skipped; /* interrupts delivered but not acted on (receiver re-check) */
	uint64_t wakeup_preempts; /* kicks for wakeup_preempt */
	uint64_t interrupts;      /* interrupts delivered (preempts + skipped) */
	uint64_t switches;        /* runs started with another task than the worker's last */
	uint64_t steals;          /* tasks taken by balance */
	uint64_t parked_wakeups;  /* runs started by a worker that had parked */
	uint64_t events;
	uint64_t max_inflight;
	double busy_frac;         /* worker time running tasks (incl. overheads) / cores x run */
	double overhead_frac;     /* worker time lost to mechanism, switch and dispatch costs */
	double sender_frac;       /* busy time of the central sender / dispatcher / run */
	char violation[256];
};

/** sim_config_default() - 16 cores, fifo, no preemption, exp:10us, 200000 requests, seed 1. */
void sim_config_default(struct sim_config *cfg);

/** sim_mean_service_ns() - mean service time of @cfg's workload (trace or distribution). */
double sim_mean_service_ns(const struct sim_config *cfg);

/** sim_rate_for_load() - the arrival rate (requests/s) that makes utilisation @load. */
double sim_rate_for_load(const struct sim_config *cfg, double load);

/**
 * sim_run() - run one simulation.
 * Return: 0 (see @res->violation for a broken invariant); -EINVAL for a bad configuration (an
 * unknown policy, a policy that rejects its parameters, ...) with the reason in @err; -ENOMEM.
 * Never aborts.
 */
int sim_run(const struct sim_config *cfg, struct sim_result *res, char *err, size_t errlen);

/** sim_result_free() - free what sim_run() allocated in @res (safe on a zeroed result). */
void sim_result_free(struct sim_result *res);

/* The engines behind sim_run() (engine.c: Jiffy policies; ps.c: processor sharing). */
int sim_engine_run(const struct sim_config *cfg, struct sim_result *res, char *err, size_t errlen);

/**
 * sim_param_add() - add the setting @text, "[POLICY.]NAME=VALUE", to @cfg->tun (jiffy-sim's
 * --param). One that names its policy is checked against that policy's table at once; the
 * others when the policy is known, by sim_run() (sim_params_check()).
 * Return: 0, or -EINVAL with a message starting "--param: " that quotes the setting.
 */
int sim_param_add(struct sim_config *cfg, const char *text, char *err, size_t errlen);

/**
 * sim_policy_params() - @ops's parameters under @cfg: its table's defaults, then the settings
 * that are its own, and @cfg's quantum, into @params (nworkers and seed are left as they are).
 * @ops NULL: the simulated policy is "ps", which takes none.
 * Return: 0, or -EINVAL with a message starting "--param: " (a setting that is no value of its
 * parameter, names no parameter or no policy).
 */
int sim_policy_params(const struct sim_config *cfg, const struct jf_policy_ops *ops,
		      struct jf_policy_params *params, char *err, size_t errlen);

/** sim_params_check() - sim_policy_params() for @cfg's policy, only for its verdict. */
int sim_params_check(const struct sim_config *cfg, char *err, size_t errlen);
int sim_ps_run(const struct sim_config *cfg, struct sim_result *res, char *err, size_t errlen);

/* Class names of @cfg's workload, and their number. */
int sim_class_names(const struct sim_config *cfg, const char (**names)[SIM_CLASS_NAME_MAX]);

/**
 * sim_trace_load() - read an arrival trace: one request per line, "ARRIVAL SERVICE [CLASS]",
 * times with units (10us, 1.5ms; ARRIVAL from the trace's start, non-decreasing), '#' comments.
 * Return: 0, or -errno with a message naming the file and line in @err.
 */
int sim_trace_load(struct sim_trace *tr, const char *path, char *err, size_t errlen);
void sim_trace_free(struct sim_trace *tr);

#endif /* JIFFY_SIM_H */
