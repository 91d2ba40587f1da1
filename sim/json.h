/*
 * sim/json.h - just enough JSON reading for jiffy-calibrate's output (the "measured" preset).
 *
 * Owns: looking up a value by its path of object keys in a JSON text held in memory, and
 * reading it as a number, a boolean or a string. No tree is built: a lookup walks the text and
 * skips what it does not need. Invariant: never reads past the terminating NUL, whatever the
 * input (a malformed document is a lookup failure, not a crash).
 */
#ifndef JIFFY_SIM_JSON_H
#define JIFFY_SIM_JSON_H

#include <stdbool.h>
#include <stddef.h>

enum sim_json_type { SIM_JSON_MISSING, SIM_JSON_NULL, SIM_JSON_BOOL, SIM_JSON_NUMBER,
		     SIM_JSON_STRING, SIM_JSON_OTHER };

/**
 * sim_json_get() - the value at @path (@n object keys from the root) of @doc.
 * @num, @flag, @str (size @strlen) receive it when it is a number, a boolean, a string (escapes
 * other than \" and \\ are kept as written); any may be NULL.
 * Return: its type; SIM_JSON_MISSING when a key is absent or the document is malformed there.
 */
enum sim_json_type sim_json_get(const char *doc, const char *const *path, int n, double *num,
				bool *flag, char *str, size_t strlen);

/** sim_json_valid() - is @doc one well-formed JSON value (and nothing else but spaces)? */
bool sim_json_valid(const char *doc);

#endif /* JIFFY_SIM_JSON_H */
