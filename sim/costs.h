/*
 * sim/costs.h - the preemption mechanism's cost model, and its presets.
 *
 * Owns: struct sim_costs (what each cost does in the model is stated field by field below and
 * in docs/simulator.md) and the named presets with the papers' numbers (costs.c says where each
 * number comes from), including "measured", read from jiffy-calibrate's JSON.
 * Invariant: every field is >= 0; a preset is fully described by its fields (the engine knows no
 * mechanism by name).
 */
#ifndef JIFFY_SIM_COSTS_H
#define JIFFY_SIM_COSTS_H

#include <stdbool.h>
#include <stddef.h>

/* Cycles at the clock of the papers' machines (2.0 GHz: xUI §5.1, Aspen §4, Shinjuku §3.2). */
#define SIM_PAPER_GHZ 2.0

/**
 * struct sim_costs - a mechanism, as the model sees it.
 * @name:           the preset's name as given ("uintr", "measured:deadline").
 * @preempt:        false: no preemption at all ("none": ticks and kicks never happen).
 * @receiver_ns:    per interrupt delivered, on the interrupted worker: the worker makes no
 *                  progress for this long (handler entry and exit, lost pipeline work), whether
 *                  it then switches (a preemption) or not (a skipped one).
 * @sender_ns:      per interrupt sent (a tick or a wakeup kick), on the sender.
 * @sender_central: true: one sender (a timer core, a dispatcher) serves every worker, one
 *                  interrupt at a time: an interrupt is delivered when the sender is free and
 *                  has spent @sender_ns on it, so 1/@sender_ns interrupts per second is the
 *                  most it can send (preemptions are late when it is saturated). false: each
 *                  worker arms its own (a per-thread timer): @sender_ns is added to the
 *                  receiver's cost and there is no shared limit.
 * @switch_ns:      per switch: a worker starting a task other than the one it ran last
 *                  (after a completion, a block, a yield or a preemption) loses this long.
 * @check_ns, @check_every_ns: safepoint instrumentation: a check costing @check_ns after every
 *                  @check_every_ns of a task's own work, so every task runs (1 + check/every)
 *                  times slower, preempted or not; and a preemption takes effect only at the
 *                  next check (uniform in [0, @check_every_ns] after it was requested).
 *                  @check_every_ns = 0: no instrumentation (interrupts act at once).
 * @no_kick:        the mechanism cannot interrupt a worker at once, only at the due times of
 *                  its runs (Aspen's and Shinjuku's timer core): the policy's wakeup_preempt is
 *                  not acted on. false (every preset): it can (Jiffy's mechanisms "kick").
 * @dispatch_ns:    per assignment by a central dispatcher (Shinjuku): every run start waits
 *                  until the dispatcher, a single server shared with a central sender, has
 *                  spent @dispatch_ns on it. 0: workers pick by themselves (Jiffy).
 * @source:         one line: where the numbers come from.
 */
struct sim_costs {
	char name[64];
	bool preempt;
	double receiver_ns;
	double sender_ns;
	bool sender_central;
	double switch_ns;
	double check_ns;
	double check_every_ns;
	double dispatch_ns;
	bool no_kick;
	char source[320];
};

/**
 * sim_costs_preset() - the preset called @name: none, ideal, signal, uintr, tracked, kb-timer,
 * safepoint, shinjuku, or measured:MECH (MECH: a key of jiffy-calibrate's "mechanisms", e.g.
 * deadline, dispatcher, timer, safepoint+spin) read from @calib_path.
 * Return: 0; -EINVAL (unknown preset, unreadable or malformed calibration, mechanism not
 * available there) with a message naming the preset and the file in @err.
 */
int sim_costs_preset(struct sim_costs *c, const char *name, const char *calib_path, char *err,
		     size_t errlen);

/** sim_costs_names() - the preset names, for messages and --help. */
const char *sim_costs_names(void);

#endif /* JIFFY_SIM_COSTS_H */
