/*
 * policy.c - the table of scheduling policies the runtime can select by name.
 *
 * Owns: registration and lookup. Built-in policies are listed in builtin[]; applications may add
 * their own with jf_policy_register() before jf_run(). Lookup is by exact name. A registered
 * policy's parameter table is checked here (params.c), so the configuration can trust it; the
 * built-in tables are checked by test sched.params.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jiffy/policy.h>

#include "registry.h"

/* In the order docs/policies.md lists them (jf_policy_names() and error messages use it). */
static const struct jf_policy_ops *const builtin[] = {
#define JF_POLICY(name) &jf_policy_##name,
#include "policies.def"
#undef JF_POLICY
};

/*
 * The registered policies: append-only and lock-free, so that src/sched takes no lock of the
 * runtime's (a pthread mutex here resolved to the library's pthread shim: a policy object pulled
 * in the runtime; a spinlock could be held by a preempted uthread). A registrant claims slot n by
 * a CAS from NULL, then publishes it by raising nr_registered to n + 1 (release); one that finds
 * slot n taken helps raise it and tries n + 1. Readers see the entries below nr_registered
 * (acquire), every one of them complete.
 */
#define MAX_REGISTERED 32
static const struct jf_policy_ops *registered[MAX_REGISTERED];
static int nr_registered;

static int registered_count(void)
{
	return __atomic_load_n(&nr_registered, __ATOMIC_ACQUIRE);
}

/* Entry @i (< registered_count()), read with acquire: it synchronizes with the registrant's
 * CAS whoever raised the count (a plain read here raced with it for ThreadSanitizer, whose
 * model did not carry the claim through a helper's failed CAS: sched.params failed once in CI). */
static const struct jf_policy_ops *registered_at(int i)
{
	return __atomic_load_n(&registered[i], __ATOMIC_ACQUIRE);
}

const struct jf_policy_ops *jf_policy_find(const char *name)
{
	const struct jf_policy_ops *found = NULL;

	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (!strcmp(builtin[i]->name, name))
			return builtin[i];
	for (int i = 0, n = registered_count(); i < n; i++)
		if (!strcmp(registered_at(i)->name, name))
			found = registered_at(i);
	return found;
}

int jf_policy_register(const struct jf_policy_ops *ops)
{
	if (!ops || !ops->name || !ops->name[0] || !ops->init || !ops->destroy || !ops->enqueue ||
	    !ops->pick_next || !ops->has_work || ops->task_data_size > JF_TASK_POLICY_DATA ||
	    jf_policy_params_check(ops, NULL, 0))
		return -EINVAL;
	if (jf_policy_find(ops->name))
		return -EEXIST;
	for (;;) {
		int n = registered_count();
		const struct jf_policy_ops *none = NULL;

		if (n == MAX_REGISTERED)
			return -ENOSPC;
		/* acquire on failure: the other registrant's entry is published by our raise too */
		bool mine = __atomic_compare_exchange_n(&registered[n], &none, ops, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);

		/* Slot n is taken now (ours, or another registrant's): publish it. */
		__atomic_compare_exchange_n(&nr_registered, &n, n + 1, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
		if (mine)
			return 0;
	}
}

const struct jf_policy_ops *jf_policy_at(int i)
{
	const int nbuiltin = (int)(sizeof(builtin) / sizeof(builtin[0]));
	const struct jf_policy_ops *ops = NULL;

	if (i < 0)
		return NULL;
	if (i < nbuiltin)
		return builtin[i];
	if (i - nbuiltin < registered_count())
		ops = registered_at(i - nbuiltin);
	return ops;
}

void jf_policy_names(char *buf, size_t len)
{
	size_t off = 0;
	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s", i ? ", " : "",
					builtin[i]->name);
	for (int i = 0, n = registered_count(); i < n; i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, ", %s",
					registered_at(i)->name);
}

int jf_policy_registry_lookup(const char *name, const struct jf_policy_ops **ops, char *err,
			      size_t errlen)
{
	char names[256];
	*ops = jf_policy_find(name);
	if (*ops)
		return 0;
	jf_policy_names(names, sizeof(names));
	snprintf(err, errlen, "policy '%s' is unknown; available: %s", name, names);
	return -EINVAL;
}
