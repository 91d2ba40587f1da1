//! Where tokio-synth listens, and whether it may (docs/security.md): the Rust side of
//! apps/common/listen.c, with the same flags, default and rule, and the same words.
//!
//! `--bind ADDR` takes a numeric IPv4 or IPv6 address (`::1`, `[::1]`, `fe80::1%eth0`); host
//! names are refused, so where the server listens never depends on DNS. The default is
//! 127.0.0.1. On a non-loopback address (anything outside 127.0.0.0/8, ::1 and
//! ::ffff:127.x.y.z; 0.0.0.0 and :: are not loopback) the UDP protocol, which has no
//! authentication, is refused while `--protected-mode` is yes (the default), and served with a
//! WARNING line when it is no.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};

pub const BIND_DEFAULT: &str = "127.0.0.1";

/// What `--bind` and `--protected-mode` chose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listen {
    pub ip: IpAddr,
    pub scope_id: u32, // an IPv6 zone ("%eth0"), 0 for none
    pub text: String,  // as given, without the brackets: "127.0.0.1", "::1", "0.0.0.0"
    pub protect: bool,
}

impl Default for Listen {
    fn default() -> Self {
        Listen {
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            scope_id: 0,
            text: BIND_DEFAULT.to_string(),
            protect: true,
        }
    }
}

/// The interface index of an IPv6 zone: a number, or an interface's name.
fn zone_index(zone: &str) -> Option<u32> {
    if let Ok(n) = zone.parse::<u32>() {
        return Some(n);
    }
    if zone.is_empty() || zone.contains('/') || zone.starts_with('.') {
        return None;
    }
    std::fs::read_to_string(format!("/sys/class/net/{zone}/ifindex"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

impl Listen {
    /// Parses a `--bind` value; the error is the reason, to follow the flag's name and value.
    pub fn set_bind(&mut self, v: &str) -> Result<(), String> {
        let host = match v.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(h) if !h.is_empty() => h,
            _ => v,
        };
        let bad =
            || "expected a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, ::1, 0.0.0.0)".to_string();
        let (ip, scope_id) = match host.split_once('%') {
            Some((a, zone)) => {
                let a: Ipv6Addr = a.parse().map_err(|_| bad())?;
                let id = zone_index(zone)
                    .ok_or_else(|| format!("no network interface {zone:?} for the zone"))?;
                (IpAddr::V6(a), id)
            }
            None => (host.parse::<IpAddr>().map_err(|_| bad())?, 0),
        };
        self.ip = ip;
        self.scope_id = scope_id;
        self.text = host.to_string();
        Ok(())
    }

    /// Parses a `--protected-mode` value.
    pub fn set_protected(&mut self, v: &str) -> Result<(), String> {
        self.protect = match v {
            "yes" => true,
            "no" => false,
            _ => return Err("expected yes or no".to_string()),
        };
        Ok(())
    }

    /// 127.0.0.0/8, ::1 or ::ffff:127.x.y.z. 0.0.0.0 and :: are not.
    pub fn is_loopback(&self) -> bool {
        match self.ip {
            IpAddr::V4(a) => a.is_loopback(),
            IpAddr::V6(a) => {
                a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
        }
    }

    /// Whether the server may start. `open` names the front end that would serve clients
    /// without authentication. On a loopback address: Ok(None). Otherwise, protected mode on:
    /// Err(the refusal: what, why, how to override; the caller prints it and exits 2);
    /// protected mode off: Ok(Some(the WARNING line)), for the caller to print.
    pub fn check(&self, prog: &str, open: &str) -> Result<Option<String>, String> {
        let t = &self.text;
        if self.is_loopback() {
            Ok(None)
        } else if self.protect {
            Err(format!(
                "{prog}: refusing to listen on {t} (not a loopback address) without \
                 authentication: anyone who can reach {t} could use {open}. Listen on a \
                 loopback address (the default, --bind 127.0.0.1), or give --protected-mode \
                 no to accept the risk (docs/security.md)"
            ))
        } else {
            Ok(Some(format!(
                "{prog}: WARNING: listening on {t} with --protected-mode no, without \
                 authentication: anyone who can reach {t} can use {open} (docs/security.md)"
            )))
        }
    }

    /// The socket address to bind with `port`. An IPv4-mapped address (::ffff:a.b.c.d) becomes
    /// a.b.c.d, so the socket is an IPv4 one whatever net.ipv6.bindv6only says; :: is an IPv6
    /// socket that takes IPv4 too when the system allows it, as a C server's on ::.
    pub fn socket_addr(&self, port: u16) -> SocketAddr {
        match self.ip {
            IpAddr::V4(a) => SocketAddr::from((a, port)),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => SocketAddr::from((v4, port)),
                None => SocketAddr::V6(SocketAddrV6::new(a, port, 0, self.scope_id)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(v: &str) -> Result<Listen, String> {
        let mut l = Listen::default();
        l.set_bind(v).map(|_| l)
    }

    #[test]
    fn bind_values() {
        for v in [
            "127.0.0.1",
            "0.0.0.0",
            "::1",
            "[::1]",
            "::",
            "fe80::1%1",
            "::ffff:127.0.0.1",
        ] {
            assert!(bind(v).is_ok(), "--bind {v} refused");
        }
        for v in [
            "",
            "localhost",
            "notanaddress",
            "127.0.0.1:80",
            "[::1",
            "1.2.3",
            "[]",
            "127.0.0.1%1",
            "fe80::1%no/such",
        ] {
            assert!(bind(v).is_err(), "--bind {v:?} accepted");
        }
        assert_eq!(bind("[::1]").unwrap().text, "::1");
        assert_eq!(bind("fe80::1%7").unwrap().scope_id, 7);
        assert!(Listen::default().set_protected("maybe").is_err());
    }

    // The loopback rule of apps/common/listen.c.
    #[test]
    fn loopback() {
        for (v, want) in [
            ("127.0.0.1", true),
            ("127.1.2.3", true),
            ("::1", true),
            ("::ffff:127.0.0.1", true),
            ("0.0.0.0", false),
            ("::", false),
            ("10.0.0.1", false),
            ("::ffff:10.0.0.1", false),
            ("128.0.0.1", false),
            ("::2", false),
        ] {
            assert_eq!(bind(v).unwrap().is_loopback(), want, "{v}");
        }
        assert!(Listen::default().is_loopback());
    }

    #[test]
    fn refusal_and_warning() {
        assert_eq!(Listen::default().check("p", "X"), Ok(None));
        let mut l = bind("0.0.0.0").unwrap();
        let e = l.check("p", "X").unwrap_err();
        assert!(
            e.starts_with(
                "p: refusing to listen on 0.0.0.0 (not a loopback address) without \
                 authentication: anyone who can reach 0.0.0.0 could use X."
            ),
            "{e}"
        );
        assert!(e.contains("--protected-mode no"), "{e}");
        l.set_protected("no").unwrap();
        let w = l.check("p", "X").unwrap().unwrap();
        assert!(
            w.starts_with("p: WARNING: listening on 0.0.0.0 with --protected-mode no"),
            "{w}"
        );
    }

    #[test]
    fn socket_addrs() {
        assert_eq!(
            bind("::ffff:127.0.0.1").unwrap().socket_addr(5),
            "127.0.0.1:5".parse().unwrap()
        );
        assert_eq!(
            bind("[::1]").unwrap().socket_addr(5),
            "[::1]:5".parse().unwrap()
        );
        assert_eq!(
            Listen::default().socket_addr(7000),
            "127.0.0.1:7000".parse().unwrap()
        );
    }
}
