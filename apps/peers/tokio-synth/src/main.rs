//! tokio-synth: the Tokio peer of jiffy-synth. A UDP server speaking docs/protocol.md with one
//! receiving task and one spawned task per request that computes the SPIN loop itself. Tokio
//! never preempts a task, so a long request holds its worker thread until it is done: the
//! behaviour this peer exists to show next to Jiffy and Go.
//!
//! Safe by default, as the C servers (docs/security.md): it listens on 127.0.0.1 unless --bind
//! says otherwise, refuses a non-loopback address unless --protected-mode no (listen.rs), and a
//! SPIN over --max-spin-us (1 ms by default) gets TOO_LARGE with the cap as its result; at most
//! --max-inflight (4096) handler tasks run at once, and datagrams past that are dropped
//! (counted), so a flood cannot become an unbounded number of tasks (inflight.rs).

mod inflight;
mod listen;
mod proto;
mod spin;

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use tokio::net::UdpSocket;
use tokio::signal::unix::{signal, SignalKind};

#[derive(Default)]
struct Stats {
    requests: AtomicU64, // datagrams with a readable header (each gets a reply attempt)
    replies: AtomicU64,  // replies sent
    dropped: AtomicU64,  // datagrams dropped: short, bad magic, > 2048 bytes, or shed
    errors: AtomicU64,   // socket errors (receive or send)
    shed: AtomicU64,     // of dropped: arrived while --max-inflight handlers were running
}

struct Opts {
    port: u16,
    threads: usize,
    listen: listen::Listen,
    max_spin_us: u64,
    max_inflight: u64,
}

/// What a non-loopback --bind would expose (listen::Listen::check).
const OPEN_FRONT_END: &str =
    "the UDP request protocol (SPIN: any CPU time up to --max-spin-us per datagram)";

/// The --max-spin-us range and default, as apps/common/synth.h.
const SPIN_CAP_DEFAULT_US: u64 = 1000;
const SPIN_CAP_MAX_US: u64 = 10_000_000;

const USAGE: &str = "usage: tokio-synth [--port P] [--bind ADDR] [--protected-mode yes|no] \
    [--max-spin-us US]\n                   [--max-inflight N] [--threads N]\n  \
    --port P          UDP port (default 7000; 0 picks a free one, printed on the READY line)\n  \
    --bind ADDR       listen on this IPv4 or IPv6 address (default 127.0.0.1:\n                    \
    loopback only; 0.0.0.0 or :: for every interface)\n  \
    --protected-mode yes|no\n                    \
    yes (default): refuse to start on a non-loopback address while\n                    \
    a front end there has no authentication; no: start anyway,\n                    \
    with a warning (docs/security.md)\n                    \
    The UDP protocol has no authentication: an address outside\n                    \
    127.0.0.0/8 and ::1 needs --protected-mode no\n  \
    --max-spin-us US  the longest SPIN a datagram may ask for (default 1000, max\n                    \
    10000000); longer ones get TOO_LARGE (docs/security.md)\n  \
    --max-inflight N  spawned handler tasks running at once (default 4096, max\n                    \
    1000000); datagrams past it are dropped, counted in dropped\n                    \
    (docs/security.md)\n  \
    --threads N       1: current_thread runtime (default); N > 1: multi-thread runtime,\n                    \
    N workers (max 1024)\n  \
    -h, --help        this text\n  \
    --version         the program's name and the Jiffy version it belongs to";

/// What the command line asks for.
enum Cmd {
    Run(Opts),
    Help,
    Version,
}

/// An integer in [lo, hi] for `flag`; the error is the C programs' (apps/common/flags.h).
fn int_in(flag: &str, v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) && !v.starts_with('+') => Ok(n),
        _ => Err(format!(
            "{flag}: expected an integer from {lo} to {hi}, got '{v}'"
        )),
    }
}

/// The command line, as the C programs read theirs (apps/common/flags.h): `--flag value` and
/// `--flag=value`; --help (-h) and --version; an error is "--flag: problem" (main adds the
/// program's name and exits 2). Like go-synth, a long flag may also have one dash (`-port`).
fn parse_args(args: impl Iterator<Item = String>) -> Result<Cmd, String> {
    let mut o = Opts {
        port: 7000,
        threads: 1,
        listen: listen::Listen::default(),
        max_spin_us: SPIN_CAP_DEFAULT_US,
        max_inflight: inflight::DEFAULT,
    };
    let mut args = args;
    while let Some(a) = args.next() {
        let (word, inline) = match a.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        let flag = match word.strip_prefix("--").or_else(|| word.strip_prefix('-')) {
            Some(n) if !n.is_empty() && !n.starts_with('-') => format!("--{n}"),
            _ => {
                return Err(format!(
                    "unexpected argument '{a}' (this program takes only flags; see --help)"
                ))
            }
        };
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag}: needs a value (see --help)"))
        };
        match flag.as_str() {
            "--h" | "--help" | "--version" => {
                if let Some(v) = &inline {
                    return Err(format!("{flag}: takes no value, got '{v}'"));
                }
                return Ok(if flag == "--version" {
                    Cmd::Version
                } else {
                    Cmd::Help
                });
            }
            "--port" => {
                let v = value()?;
                o.port = int_in("--port", &v, 0, 65535).map_err(|_| {
                    format!("--port: expected a port number from 0 to 65535, got '{v}'")
                })? as u16;
            }
            "--bind" => {
                let v = value()?;
                o.listen
                    .set_bind(&v)
                    .map_err(|e| format!("--bind: {e}, got '{v}'"))?;
            }
            "--protected-mode" => {
                let v = value()?;
                o.listen
                    .set_protected(&v)
                    .map_err(|e| format!("--protected-mode: {e}, got '{v}'"))?;
            }
            "--max-spin-us" => {
                o.max_spin_us = int_in("--max-spin-us", &value()?, 1, SPIN_CAP_MAX_US)?;
            }
            "--max-inflight" => o.max_inflight = inflight::parse(&value()?)?,
            "--threads" => o.threads = int_in("--threads", &value()?, 1, 1024)? as usize,
            _ => return Err(format!("{flag}: unknown flag (see --help)")),
        }
    }
    Ok(Cmd::Run(o))
}

async fn serve(
    sock: Arc<UdpSocket>,
    st: Arc<Stats>,
    hdr: [u8; proto::HEADER_LEN],
    n: usize,
    from: SocketAddr,
    max_spin_ns: u64,
    _slot: inflight::Slot, // held until the reply is sent or failed (--max-inflight)
) {
    let req = proto::Request::decode(&hdr);
    let rep = proto::handle(&req, n, max_spin_ns); // SPIN computes right here, inside the task
    match sock.send_to(&rep.encode(), from).await {
        Ok(_) => st.replies.fetch_add(1, Relaxed),
        Err(_) => st.errors.fetch_add(1, Relaxed),
    };
}

/// Receives datagrams, drops the malformed ones and spawns one task per request, unless
/// --max-inflight handlers are running: then the datagram is dropped (shed), as a full socket
/// buffer would drop it.
async fn receiver(
    sock: Arc<UdpSocket>,
    st: Arc<Stats>,
    max_spin_ns: u64,
    handlers: Arc<inflight::Inflight>,
) {
    let mut buf = vec![0u8; proto::MAX_DGRAM + 1]; // a datagram that fills it is over the limit
    loop {
        let (n, from) = match sock.recv_from(&mut buf).await {
            Ok(r) => r,
            Err(_) => {
                st.errors.fetch_add(1, Relaxed);
                continue;
            }
        };
        if proto::malformed(&buf[..n]) {
            st.dropped.fetch_add(1, Relaxed);
            continue;
        }
        let Some(slot) = handlers.try_start() else {
            st.shed.fetch_add(1, Relaxed);
            st.dropped.fetch_add(1, Relaxed);
            continue;
        };
        st.requests.fetch_add(1, Relaxed);
        let mut hdr = [0u8; proto::HEADER_LEN]; // the synthetic server needs only the header
        hdr.copy_from_slice(&buf[..proto::HEADER_LEN]);
        tokio::spawn(serve(
            sock.clone(),
            st.clone(),
            hdr,
            n,
            from,
            max_spin_ns,
            slot,
        ));
    }
}

async fn run(o: Opts) -> Result<(), String> {
    let sock = UdpSocket::bind(o.listen.socket_addr(o.port))
        .await
        .map_err(|e| {
            format!(
                "cannot listen on {} UDP port {} (--bind, --port): {e}",
                o.listen.text, o.port
            )
        })?;
    let port = sock.local_addr().map_err(|e| e.to_string())?.port();
    eprintln!(
        "tokio-synth: listening on {} udp={port}; SPIN capped at {} us (--max-spin-us)",
        o.listen.text, o.max_spin_us
    );
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let st = Arc::new(Stats::default());
    tokio::spawn(receiver(
        Arc::new(sock),
        st.clone(),
        o.max_spin_us * 1000,
        inflight::Inflight::new(o.max_inflight),
    ));

    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "READY tokio-synth udp={port}");
    let _ = out.flush();
    drop(out);

    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    let shed = st.shed.load(Relaxed);
    if shed > 0 {
        eprintln!(
            "tokio-synth: shed {shed} datagrams: --max-inflight {} handlers were running \
             (counted in dropped)",
            o.max_inflight
        );
    }
    eprintln!(
        "tokio-synth: requests={} replies={} dropped={} errors={}",
        st.requests.load(Relaxed),
        st.replies.load(Relaxed),
        st.dropped.load(Relaxed),
        st.errors.load(Relaxed)
    );
    Ok(())
}

fn main() -> ExitCode {
    let o = match parse_args(std::env::args().skip(1)) {
        Ok(Cmd::Run(o)) => o,
        Ok(Cmd::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Cmd::Version) => {
            println!("tokio-synth (Jiffy) {}", env!("JIFFY_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("tokio-synth: {e}");
            return ExitCode::from(2);
        }
    };
    match o.listen.check("tokio-synth", OPEN_FRONT_END) {
        Ok(None) => {}
        Ok(Some(warning)) => eprintln!("{warning}"),
        Err(refusal) => {
            eprintln!("{refusal}");
            return ExitCode::from(2);
        }
    }
    let rate = spin::calibrate();
    let mut b = if o.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(o.threads);
        b
    };
    let rt = match b.enable_io().enable_time().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tokio-synth: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "tokio-synth: spin calibrated: {:.1} iterations/us; runtime={} threads={}",
        rate * 1000.0,
        if o.threads == 1 {
            "current_thread"
        } else {
            "multi_thread"
        },
        o.threads
    );
    let r = rt.block_on(run(o));
    match r {
        Ok(()) => {
            // Handlers may still be computing (Tokio cannot interrupt them): leave without
            // waiting for the runtime to wind down.
            let _ = std::io::stderr().flush();
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("tokio-synth: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cmd, String> {
        parse_args(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn both_spellings_and_the_single_dash_form() {
        for args in [
            &["--port=7001"][..],
            &["--port", "7001"],
            &["-port", "7001"],
            &["-port=7001"],
        ] {
            match parse(args) {
                Ok(Cmd::Run(o)) => assert_eq!(o.port, 7001, "{args:?}"),
                _ => panic!("{args:?} refused"),
            }
        }
        assert!(matches!(parse(&["--help"]), Ok(Cmd::Help)));
        assert!(matches!(parse(&["-h"]), Ok(Cmd::Help)));
        assert!(matches!(parse(&["--version"]), Ok(Cmd::Version)));
    }

    #[test]
    fn usage_errors_name_the_flag() {
        for (args, want) in [
            (
                &["--port=x"][..],
                "--port: expected a port number from 0 to 65535, got 'x'",
            ),
            (
                &["--port", "65536"],
                "--port: expected a port number from 0 to 65535, got '65536'",
            ),
            (
                &["--threads", "+2"],
                "--threads: expected an integer from 1 to 1024, got '+2'",
            ),
            (&["--port"], "--port: needs a value (see --help)"),
            (&["--bogus=1"], "--bogus: unknown flag (see --help)"),
            (&["--version=1"], "--version: takes no value, got '1'"),
            (
                &["--protected-mode", "maybe"],
                "--protected-mode: expected yes or no, got 'maybe'",
            ),
            (
                &["stray"],
                "unexpected argument 'stray' (this program takes only flags; see --help)",
            ),
        ] {
            match parse(args) {
                Err(e) => assert_eq!(e, want, "{args:?}"),
                Ok(_) => panic!("{args:?} accepted"),
            }
        }
    }
}
