/*
 * registry.h - what the policy registry (policy.c) and the parameter tables (params.c) offer
 * the rest of the library beyond the public jiffy/policy.h: walking every known policy, checking
 * a parameter table or a value, and the prefix of a policy's environment variables.
 *
 * Owns: these declarations, once (src/runtime/config.c and src/runtime/runtime.c use them), and the
 * built-in policies' tables, declared where each policy file and policy.c see the same line.
 */
#ifndef JIFFY_SCHED_REGISTRY_H
#define JIFFY_SCHED_REGISTRY_H

#include <stddef.h>

#include <jiffy/policy.h>

/* The built-in policies (policies.def, the one list), each defined in its own file (which
 * includes this header, so that the definition and the declaration policy.c's table uses cannot
 * disagree). */
#define JF_POLICY(name) extern const struct jf_policy_ops jf_policy_##name;
#include "policies.def"
#undef JF_POLICY

/* The @i-th known policy: the built-in ones, then the registered ones; NULL past the last. */
const struct jf_policy_ops *jf_policy_at(int i);

/* 0, or -EINVAL with a message naming the policy and the parameter: @ops's table is unusable. */
int jf_policy_params_check(const struct jf_policy_ops *ops, char *err, size_t errlen);

/* "JIFFY_" + the policy's name + "_", as jf_policy_param_env() begins ("JIFFY_RR_"). */
size_t jf_policy_env_prefix(const char *policy, char *buf, size_t len);

/* 0, or -EINVAL with a message quoting @value as written: @value is outside @param's range. */
int jf_policy_param_check_value(const struct jf_policy_param *param, uint64_t value, char *err,
				size_t errlen);

/* @ops's parameter names, comma separated ("none" without any), for messages. */
void jf_policy_param_names(const struct jf_policy_ops *ops, char *buf, size_t len);

#endif /* JIFFY_SCHED_REGISTRY_H */
