//! load/src/main.rs - jiffy-load, the open-loop UDP load generator of the Jiffy experiments:
//! the command line, the run (schedule, pinning, loop or threads mode), the validity rule and
//! the reports (human summary on stdout, --json, --csv). See load/README.md.

mod net;
mod proto;
mod run;
mod sched;
mod spec;
mod stats;

use clap::{Parser, ValueEnum};
use sched::{Schedule, Workload};
use serde_json::{json, Map, Value};
use stats::{ClassStats, SLOW_SCALE};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    Auto,
    Loop,
    Threads,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum WorkloadKind {
    Spin,
    Kv,
    Ping,
}

/// Open-loop UDP load generator for the Jiffy request protocol (docs/protocol.md).
#[derive(Parser, Debug)]
#[command(name = "jiffy-load", version)]
struct Cli {
    /// Server address HOST:PORT
    #[arg(long, default_value = "127.0.0.1:7000")]
    server: String,
    /// Name of the server for the reports (CSV "server" column); default: the address
    #[arg(long)]
    server_name: Option<String>,
    /// Offered load, requests per second (Poisson arrivals)
    #[arg(long)]
    rate: f64,
    /// Length of the schedule in seconds, warm-up included
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds at the start whose requests are not measured
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Wait this long after the last send for outstanding replies; later ones are lost
    #[arg(long, default_value_t = 500)]
    drain_ms: u64,
    /// spin (SPIN requests with --dist service times), kv (--mix of GET/PUT/DEL/SCAN), ping
    #[arg(long, value_enum, default_value_t = WorkloadKind::Spin)]
    workload: WorkloadKind,
    /// Service times (spin): fixed:T, exp:MEAN, lognormal:MEAN:SD, bimodal:P:S1:S2,
    /// trimodal:P1:S1:P2:S2:S3; times with units ns/us/ms/s
    #[arg(long, default_value = "fixed:10us")]
    dist: String,
    /// KV operation mix, OP:PERCENT,... with OP in get, put, del, scan
    #[arg(long, default_value = "get:100")]
    mix: String,
    /// Keys per SCAN
    #[arg(long, default_value_t = 100)]
    scan_n: u64,
    /// Key space [0, keys) (uniform)
    #[arg(long, default_value_t = 100_000)]
    keys: u32,
    /// PUT value size in bytes (<= 1400)
    #[arg(long, default_value_t = 64)]
    value_size: usize,
    /// KV nominal service times for slowdowns, e.g. get=1us,scan=500us
    #[arg(long)]
    service: Option<String>,
    /// loop (one thread), threads (sender + receiver), auto (loop with < 2 CPUs)
    #[arg(long, value_enum, default_value_t = Mode::Auto)]
    mode: Mode,
    /// Pin all threads to these CPUs (e.g. 1, or 2-3)
    #[arg(long)]
    cpu: Option<String>,
    /// Random seed of the schedule
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The run is invalid if the sender's p99 lag behind the schedule exceeds this (us)
    #[arg(long, default_value_t = 50.0)]
    max_lag_us: f64,
    /// The run is invalid if more than this percentage of measured requests is lost
    #[arg(long, default_value_t = 0.1)]
    max_lost_pct: f64,
    /// Socket buffer sizes (SO_RCVBUF/SO_SNDBUF) in bytes
    #[arg(long, default_value_t = 4 << 20)]
    sockbuf: usize,
    /// Write one JSON object here
    #[arg(long)]
    json: Option<String>,
    /// Append one row per class (and "overall") here; header when the file is new
    #[arg(long)]
    csv: Option<String>,
    /// A label for the reports
    #[arg(long, default_value = "")]
    label: String,
    /// Print only the final one-line summary (and warnings)
    #[arg(long)]
    quiet: bool,
}

/// The workload and its description for the reports (the --dist or --mix string).
fn workload(cli: &Cli) -> Result<(Workload, String), String> {
    match cli.workload {
        WorkloadKind::Ping => Ok((Workload::Ping, "-".into())),
        WorkloadKind::Spin => Ok((Workload::Spin(spec::Dist::parse(&cli.dist)?), cli.dist.clone())),
        WorkloadKind::Kv => {
            let mix = spec::Mix::parse(&cli.mix)?;
            if cli.keys == 0 {
                return Err("--keys must be > 0".into());
            }
            if cli.value_size > proto::MAX_VALUE {
                return Err(format!("--value-size {} > {}", cli.value_size, proto::MAX_VALUE));
            }
            let mut service = vec![None; mix.ops.len()];
            if let Some(sv) = &cli.service {
                for (op, t) in spec::parse_service(sv)? {
                    match mix.ops.iter().position(|(o, _)| *o == op) {
                        Some(i) => service[i] = Some(t),
                        None => return Err(format!("--service names {} which is not in --mix", op.name())),
                    }
                }
            }
            Ok((Workload::Kv { mix, keys: cli.keys, scan_n: cli.scan_n, value_size: cli.value_size, service }, cli.mix.clone()))
        }
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn r2(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

struct Summary {
    count: u64,
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
    mean: f64,
    slow: Option<(f64, f64, f64)>,
}

fn summarize(c: &ClassStats) -> Summary {
    let q = |x| us(if c.lat.is_empty() { 0 } else { c.lat.value_at_quantile(x) });
    let slow = if c.slow.is_empty() {
        None
    } else {
        let s = |x| c.slow.value_at_quantile(x) as f64 / SLOW_SCALE;
        Some((s(0.5), s(0.99), s(0.999)))
    };
    Summary {
        count: c.count,
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        p999: q(0.999),
        max: us(c.lat.max()),
        mean: if c.count > 0 { c.lat_sum_ns as f64 / c.count as f64 / 1e3 } else { 0.0 },
        slow,
    }
}

fn csv_field(s: &str) -> String {
    if s.contains(',') || s.contains('"') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("jiffy-load: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn real_main(cli: Cli) -> Result<ExitCode, String> {
    // ---- validate the configuration (the workload first: its errors are the likeliest)
    let (wl, dist_str) = workload(&cli)?;
    if !(cli.rate.is_finite() && cli.rate > 0.0) {
        return Err(format!("--rate {}: must be > 0", cli.rate));
    }
    if !(cli.duration.is_finite() && cli.duration > 0.0 && cli.duration <= 86400.0) {
        return Err(format!("--duration {}: must be in (0, 86400] seconds", cli.duration));
    }
    if !(cli.warmup.is_finite() && cli.warmup >= 0.0 && cli.warmup < cli.duration) {
        return Err(format!("--warmup {}: must be in [0, --duration)", cli.warmup));
    }
    let class_names = wl.class_names();
    let mean_svc = match &wl {
        Workload::Spin(d) => Some(d.mean_ns()),
        _ => None,
    };
    let addr = net::resolve(&cli.server)?;
    let cpus = match &cli.cpu {
        Some(c) => {
            let v = spec::parse_cpus(c)?;
            net::pin(&v)?;
            Some(v)
        }
        None => None,
    };
    let ncpu = net::allowed_cpus();
    let mode = match cli.mode {
        Mode::Auto if ncpu < 2 => Mode::Loop,
        Mode::Auto => Mode::Threads,
        m => m,
    };
    if mode == Mode::Threads && ncpu < 2 {
        eprintln!("jiffy-load: warning: --mode threads with one CPU: sender and receiver share it");
    }
    let duration_ns = (cli.duration * 1e9) as u64;
    let w0 = (cli.warmup * 1e9) as u64;
    let w1 = duration_ns;
    let window_s = (w1 - w0) as f64 / 1e9;
    let schedule = Schedule::build(wl, cli.rate, duration_ns, cli.seed)?;
    let n = schedule.len();
    let sock = net::Sock::connect(addr, cli.sockbuf)?;
    let server_name = cli.server_name.clone().unwrap_or_else(|| cli.server.clone());

    // ---- run
    let p = run::RunParams {
        w0,
        w1,
        duration_ns,
        drain_ns: cli.drain_ms * 1_000_000,
        progress: cli.duration > 5.0 && !cli.quiet,
        give_up_ns: 1_000_000_000,
    };
    let start = Instant::now() + Duration::from_millis(20);
    while Instant::now() < start {
        std::hint::spin_loop();
    }
    let schedule = Arc::new(schedule);
    let res = match mode {
        Mode::Loop => run::run_loop(&sock, &schedule, &p, start, class_names.len()),
        _ => run::run_threads(&sock, Arc::clone(&schedule), &p, start, class_names.len(), ncpu < 2),
    };
    let mut rx = res.rx;
    let tx = res.tx;
    let unsent = rx.finish(&schedule, res.deadline_ns, res.sent_upto);

    // ---- aggregate
    let mut overall = ClassStats::new();
    for c in &rx.classes {
        overall.merge(c);
    }
    let scheduled = overall.scheduled;
    let offered_rps = scheduled as f64 / window_s;
    let achieved_rps = overall.replies_in_window as f64 / window_s;
    let send_rps = tx.sent_in_window as f64 / window_s;
    let lagq = |q| if tx.lag.is_empty() { 0.0 } else { us(tx.lag.value_at_quantile(q)) };
    let (lag50, lag99, lag999, lagmax) = (lagq(0.5), lagq(0.99), lagq(0.999), us(tx.lag.max()));
    let errors = overall.errors;
    let lost = overall.lost;

    // ---- validity
    let mut reasons: Vec<String> = Vec::new();
    if lag99 > cli.max_lag_us {
        reasons.push(format!("sender p99 lag {lag99:.1} us > {} us: the sender could not keep up", cli.max_lag_us));
    }
    if scheduled > 0 && (tx.sent_in_window as f64) < 0.99 * scheduled as f64 {
        reasons.push(format!("send rate {send_rps:.0}/s < 99% of offered {offered_rps:.0}/s"));
    }
    if unsent > 0 {
        reasons.push(format!("{unsent} measured requests never sent (sender more than 1 s behind)"));
    }
    if tx.send_errors > 0 {
        reasons.push(format!("{} send errors", tx.send_errors));
    }
    if scheduled > 0 && lost as f64 > cli.max_lost_pct / 100.0 * scheduled as f64 {
        reasons.push(format!(
            "{lost} of {scheduled} measured requests lost ({:.3}% > {}%)",
            100.0 * lost as f64 / scheduled as f64,
            cli.max_lost_pct
        ));
    }
    if scheduled > 0 && errors as f64 > 0.001 * scheduled as f64 {
        reasons.push(format!("{errors} error replies (status other than OK/NOT_FOUND)"));
    }
    if scheduled == 0 {
        reasons.push("no request was scheduled in the measured window".into());
    }
    let valid = reasons.is_empty();

    // ---- reports
    let cpu_s = net::cpu_time_s();
    let cls_json = |c: &ClassStats| -> Value {
        let s = summarize(c);
        let mut m = json!({
            "count": s.count, "replies": c.replies, "lost": c.lost, "errors": c.errors,
            "scheduled": c.scheduled,
            "offered_rps": r2(c.scheduled as f64 / window_s),
            "achieved_rps": r2(c.replies_in_window as f64 / window_s),
            "p50_us": r2(s.p50), "p90_us": r2(s.p90), "p99_us": r2(s.p99), "p999_us": r2(s.p999),
            "max_us": r2(s.max), "mean_us": r2(s.mean),
        });
        if let Some((a, b, d)) = s.slow {
            m["slow_p50"] = json!(a);
            m["slow_p99"] = json!(b);
            m["slow_p999"] = json!(d);
        }
        m
    };
    let mut classes = Map::new();
    for (i, c) in rx.classes.iter().enumerate() {
        classes.insert(class_names[i].clone(), cls_json(c));
    }
    let mut status = Map::new();
    for (i, &c) in rx.status_counts.iter().enumerate() {
        if c > 0 {
            let name = proto::STATUS_NAMES.get(i).map(|s| s.to_string()).unwrap_or(format!("status_{i}"));
            status.insert(name, json!(c));
        }
    }
    let mode_s = res.mode;
    let config = json!({
        "server": cli.server, "server_name": server_name, "rate": cli.rate, "duration_s": cli.duration,
        "warmup_s": cli.warmup, "drain_ms": cli.drain_ms, "workload": format!("{:?}", cli.workload).to_lowercase(),
        "dist": cli.dist, "mix": cli.mix, "scan_n": cli.scan_n, "keys": cli.keys,
        "value_size": cli.value_size, "service": cli.service, "mode": format!("{:?}", cli.mode).to_lowercase(),
        "mode_used": mode_s, "cpu": cli.cpu, "cpus_allowed": ncpu, "seed": cli.seed,
        "max_lag_us": cli.max_lag_us, "max_lost_pct": cli.max_lost_pct,
        "sockbuf": cli.sockbuf, "rcvbuf": sock.rcvbuf, "sndbuf": sock.sndbuf, "label": cli.label,
        "classes": class_names,
        "mean_service_us": mean_svc.map(|m| r2(m / 1e3)),
        "offered_utilisation_1core": mean_svc.map(|m| r2(m * cli.rate / 1e9)),
    });
    let bad = rx.bad;
    let out = json!({
        "label": cli.label, "server": server_name, "workload": config["workload"], "dist": dist_str,
        "valid": valid, "invalid_reasons": reasons,
        "config": config,
        "window_s": window_s, "scheduled_total": n,
        "offered_rps": r2(offered_rps), "achieved_rps": r2(achieved_rps), "send_rps": r2(send_rps),
        "sent": tx.sent, "received": rx.replies_total, "lost": lost, "unsent": unsent,
        "errors": errors, "send_errors": tx.send_errors, "status_counts": status,
        "bad_replies": {"short": bad.short, "bad_magic": bad.bad_magic, "unknown_id": bad.unknown_id,
                        "duplicate": bad.duplicate, "mismatched": bad.mismatched},
        "lag_us": {"p50": r2(lag50), "p99": r2(lag99), "p999": r2(lag999), "max": r2(lagmax)},
        "load_cpu_stalls": {"mode": res.mode, "over_100us": res.stalls.over_100us,
                            "over_1ms": res.stalls.over_1ms, "max_us": r2(res.stalls.max_ns as f64 / 1e3),
                            "lost_pct": r2(100.0 * res.stalls.total_ns as f64 / (window_s * 1e9).max(1.0))},
        "run_s": r2(res.end_ns as f64 / 1e9),
        "cpu_s": r2(cpu_s),
        "overall": cls_json(&overall),
        "classes": classes,
    });

    if let Some(path) = &cli.json {
        let s = serde_json::to_string_pretty(&out).expect("json");
        std::fs::write(path, s + "\n").map_err(|e| format!("--json {path}: {e}"))?;
    }
    if let Some(path) = &cli.csv {
        let new = std::fs::metadata(path).map(|m| m.len() == 0).unwrap_or(true);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("--csv {path}: {e}"))?;
        let mut rows = String::new();
        if new {
            rows.push_str("label,server,workload,dist,class,offered_rps,achieved_rps,count,lost,errors,p50_us,p90_us,p99_us,p999_us,max_us,mean_us,slow_p50,slow_p99,slow_p999,lag_p99_us,valid,mode,rate,sent,received,lag_max_us,run_s,cpu_s\n");
        }
        let mut row = |name: &str, c: &ClassStats| {
            let s = summarize(c);
            let (a, b, d) = match s.slow {
                Some((a, b, d)) => (format!("{a}"), format!("{b}"), format!("{d}")),
                None => (String::new(), String::new(), String::new()),
            };
            rows.push_str(&format!(
                "{},{},{},{},{},{:.1},{:.1},{},{},{},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{},{},{},{:.2},{},{},{},{},{},{:.2},{:.3},{:.3}\n",
                csv_field(&cli.label), csv_field(&server_name), config["workload"].as_str().unwrap_or(""),
                csv_field(&dist_str), name, c.scheduled as f64 / window_s, c.replies_in_window as f64 / window_s,
                s.count, c.lost, c.errors, s.p50, s.p90, s.p99, s.p999, s.max, s.mean, a, b, d, lag99,
                valid, mode_s, cli.rate, tx.sent, rx.replies_total, lagmax, res.end_ns as f64 / 1e9, cpu_s
            ));
        };
        for (i, c) in rx.classes.iter().enumerate() {
            row(&class_names[i], c);
        }
        row("overall", &overall);
        f.write_all(rows.as_bytes()).map_err(|e| format!("--csv {path}: {e}"))?;
    }

    // human summary
    let mut o = String::new();
    if !cli.quiet {
        o += &format!(
            "jiffy-load: {} {} -> {} ({}), mode {}, {} CPU(s){}\n",
            config["workload"].as_str().unwrap_or(""),
            dist_str,
            cli.server,
            server_name,
            mode_s,
            ncpu,
            cpus.map(|c| format!(" {c:?}")).unwrap_or_default()
        );
        o += &format!(
            "window {window_s:.2} s: offered {offered_rps:.1} req/s (--rate {}), achieved {achieved_rps:.1} replies/s\n",
            cli.rate
        );
        o += &format!(
            "sent {} received {} lost {lost} (unsent {unsent}) errors {errors} send-errors {} bad replies {}\n",
            tx.sent, rx.replies_total, tx.send_errors, bad.total()
        );
        o += &format!(
            "sender lag: p50 {lag50:.1} us, p99 {lag99:.1} us, p99.9 {lag999:.1} us, max {lagmax:.1} us; send rate {send_rps:.1}/s\n"
        );
        o += &format!(
            "{:<8} {:>9} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8}\n",
            "class", "count", "lost", "errors", "p50_us", "p90_us", "p99_us", "p99.9_us", "max_us", "mean_us", "slow50", "slow99", "slow999"
        );
        let line = |name: &str, c: &ClassStats| {
            let s = summarize(c);
            let (a, b, d) = match s.slow {
                Some((a, b, d)) => (format!("{a:.2}"), format!("{b:.2}"), format!("{d:.2}")),
                None => ("-".into(), "-".into(), "-".into()),
            };
            format!(
                "{:<8} {:>9} {:>6} {:>6} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8} {:>8} {:>8}\n",
                name, s.count, c.lost, c.errors, s.p50, s.p90, s.p99, s.p999, s.max, s.mean, a, b, d
            )
        };
        for (i, c) in rx.classes.iter().enumerate() {
            o += &line(&class_names[i], c);
        }
        if rx.classes.len() > 1 {
            o += &line("overall", &overall);
        }
    }
    let s = summarize(&overall);
    o += &format!(
        "{} offered={offered_rps:.0} achieved={achieved_rps:.0} p50={:.1}us p99={:.1}us mean={:.1}us lost={lost} lag_p99={lag99:.1}us\n",
        if valid { "VALID" } else { "INVALID" },
        s.p50,
        s.p99,
        s.mean
    );
    print!("{o}");
    let _ = std::io::stdout().flush();
    if !valid {
        for r in &reasons {
            eprintln!("jiffy-load: warning: run invalid: {r}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
