/*
 * json_out.h - writing a JSON string: the one piece of JSON output the project's C tools share.
 *
 * Owns: jf_json_str(), used by tools/jiffy-calibrate.c (its calibration file) and sim/report.c
 * (jiffy-sim --json). Numbers stay with each writer (their precision differs on purpose).
 */
#ifndef JIFFY_COMMON_JSON_OUT_H
#define JIFFY_COMMON_JSON_OUT_H

#include <stdio.h>

/* @s as a JSON string (quotes and backslashes escaped, control characters as \uXXXX); NULL as
 * null. */
static inline void jf_json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

#endif /* JIFFY_COMMON_JSON_OUT_H */
