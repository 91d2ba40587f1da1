/*
 * sim/report.h - jiffy-sim's reports: the human summary, jiffy-load's CSV row format, JSON.
 *
 * Owns: turning a struct sim_result into text. The CSV columns, their order and their number
 * formats are jiffy-load's (load/src/main.rs; load/README.md "Reports"), so that simulated and
 * measured rows sit in one file and one plot. The columns jiffy-load fills from its sender take
 * constants here (docs/simulator.md): lag_p99_us and lag_max_us 0.00, errors 0, mode "sim",
 * cpu_s 0.000 (host time would make the output depend on the machine; jiffy-sim prints it on
 * stderr instead).
 * Invariant: every number is printed deterministically (no host time, no locale).
 */
#ifndef JIFFY_SIM_REPORT_H
#define JIFFY_SIM_REPORT_H

#include <stdio.h>

#include "sim.h"

/**
 * struct sim_report_info - what the reports say about a run besides its results.
 * @label, @server, @workload, @dist: jiffy-load's first columns (@dist: the --dist text or
 *               "trace:FILE").
 * @class_names: names of the result's classes.
 * @load:        the utilisation asked for (0 when a rate was given).
 */
struct sim_report_info {
	const char *label;
	const char *server;
	const char *workload;
	const char *dist;
	const char (*class_names)[SIM_CLASS_NAME_MAX];
	double load;
};

/* Rust's f64 Display: the shortest decimal that reads back as @v, never in exponent form. */
void sim_fmt_display(char *buf, size_t len, double v);

/** sim_report_valid() - jiffy-load's validity rule (lost <= 0.1 %, something measured). */
bool sim_report_valid(const struct sim_result *res);

/** sim_report_human() - the summary jiffy-load prints, plus the simulator's counters. */
void sim_report_human(FILE *f, const struct sim_config *cfg, const struct sim_result *res,
		      const struct sim_report_info *info, bool quiet);

/**
 * sim_report_csv() - append one row per class and an "overall" row to @path, with the header
 * when the file is new or empty. Return: 0, or -errno with a message naming the file in @err.
 */
int sim_report_csv(const char *path, const struct sim_config *cfg, const struct sim_result *res,
		   const struct sim_report_info *info, char *err, size_t errlen);

/** sim_report_json() - one JSON object describing the run (config, results, counters). */
void sim_report_json(FILE *f, const struct sim_config *cfg, const struct sim_result *res,
		     const struct sim_report_info *info);

#endif /* JIFFY_SIM_REPORT_H */
