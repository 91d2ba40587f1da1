//! load/src/spec.rs - parsing of the command-line specifications of jiffy-load: durations with
//! units, service-time distributions (--dist), the KV operation mix (--mix), nominal service
//! times (--service) and CPU lists (--cpu). Every malformed input is a clear Err(String), never
//! a panic; the tests cover the accepted and the refused forms.

use crate::proto::Op;
use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal};

/// Parse "10us", "0.5ms", "500ns", "1s" (also "µs") into nanoseconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+'))
        .ok_or_else(|| format!("'{s}': missing unit (use ns, us, ms or s, e.g. 10us)"))?;
    let (num, unit) = t.split_at(split);
    let mult = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("'{s}': unknown unit '{unit}' (use ns, us, ms or s)")),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}': '{num}' is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("'{s}': must be a non-negative finite time"));
    }
    let ns = v * mult;
    if ns > 1e15 {
        return Err(format!("'{s}': too large"));
    }
    Ok(ns.round() as u64)
}

fn parse_percent(s: &str, what: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{what}: '{s}' is not a percentage"))?;
    if !(0.0..=100.0).contains(&v) || !v.is_finite() {
        return Err(format!("{what}: {v} is not in [0, 100]"));
    }
    Ok(v)
}

/// A service-time distribution (--dist).
#[derive(Clone, Debug)]
pub enum Dist {
    Fixed(u64),
    Exp { mean_ns: f64, exp: Exp<f64> },
    LogNormal { mean_ns: f64, ln: LogNormal<f64> },
    /// Modes: (cumulative probability, service ns); the last cumulative is 1.
    Modes(Vec<(f64, u64)>),
}

impl Dist {
    pub fn parse(s: &str) -> Result<Dist, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let err = |m: String| format!("--dist '{s}': {m}");
        let want = |n: usize, form: &str| -> Result<(), String> {
            if parts.len() != n {
                Err(err(format!("expected {form}")))
            } else {
                Ok(())
            }
        };
        let dur = |x: &str| parse_duration_ns(x).map_err(&err);
        match parts[0] {
            "fixed" => {
                want(2, "fixed:TIME (e.g. fixed:10us)")?;
                Ok(Dist::Fixed(dur(parts[1])?))
            }
            "exp" => {
                want(2, "exp:MEAN (e.g. exp:10us)")?;
                let m = dur(parts[1])? as f64;
                if m <= 0.0 {
                    return Err(err("the mean must be > 0".into()));
                }
                let exp = Exp::new(1.0 / m).map_err(|e| err(e.to_string()))?;
                Ok(Dist::Exp { mean_ns: m, exp })
            }
            "lognormal" => {
                want(3, "lognormal:MEAN:SD (e.g. lognormal:1us:10us)")?;
                let m = dur(parts[1])? as f64;
                let sd = dur(parts[2])? as f64;
                if m <= 0.0 {
                    return Err(err("the mean must be > 0".into()));
                }
                // Mean m and standard deviation sd of the distribution itself:
                // sigma^2 = ln(1 + sd^2/m^2), mu = ln(m) - sigma^2/2.
                let s2 = (1.0 + (sd * sd) / (m * m)).ln();
                let mu = m.ln() - s2 / 2.0;
                let ln = LogNormal::new(mu, s2.sqrt()).map_err(|e| err(e.to_string()))?;
                Ok(Dist::LogNormal { mean_ns: m, ln })
            }
            "bimodal" => {
                want(4, "bimodal:P:S1:S2 (P percent S1, the rest S2; e.g. bimodal:99.5:500ns:500us)")?;
                let p = parse_percent(parts[1], "bimodal P").map_err(&err)? / 100.0;
                Ok(Dist::Modes(vec![(p, dur(parts[2])?), (1.0, dur(parts[3])?)]))
            }
            "trimodal" => {
                want(6, "trimodal:P1:S1:P2:S2:S3 (e.g. trimodal:90:1us:9:10us:1ms)")?;
                let p1 = parse_percent(parts[1], "trimodal P1").map_err(&err)?;
                let p2 = parse_percent(parts[3], "trimodal P2").map_err(&err)?;
                if p1 + p2 > 100.0 {
                    return Err(err(format!("P1 + P2 = {} > 100", p1 + p2)));
                }
                Ok(Dist::Modes(vec![
                    (p1 / 100.0, dur(parts[2])?),
                    ((p1 + p2) / 100.0, dur(parts[4])?),
                    (1.0, dur(parts[5])?),
                ]))
            }
            other => Err(err(format!(
                "unknown distribution '{other}' (fixed, exp, lognormal, bimodal, trimodal)"
            ))),
        }
    }

    /// Class names: one per mode for bimodal/trimodal, else "all".
    pub fn class_names(&self) -> Vec<String> {
        match self {
            Dist::Modes(m) if m.len() == 2 => vec!["short".into(), "long".into()],
            Dist::Modes(m) if m.len() == 3 => {
                vec!["short".into(), "medium".into(), "long".into()]
            }
            _ => vec!["all".into()],
        }
    }

    /// Mean service time in ns.
    pub fn mean_ns(&self) -> f64 {
        match self {
            Dist::Fixed(d) => *d as f64,
            Dist::Exp { mean_ns, .. } => *mean_ns,
            Dist::LogNormal { mean_ns, .. } => *mean_ns,
            Dist::Modes(m) => {
                let mut prev = 0.0;
                let mut sum = 0.0;
                for &(c, d) in m {
                    sum += (c - prev) * d as f64;
                    prev = c;
                }
                sum
            }
        }
    }

    /// Draw (class index, service ns).
    pub fn sample<R: Rng>(&self, rng: &mut R) -> (u8, u64) {
        match self {
            Dist::Fixed(d) => (0, *d),
            Dist::Exp { exp, .. } => (0, exp.sample(rng).round() as u64),
            Dist::LogNormal { ln, .. } => (0, ln.sample(rng).min(1e15).round() as u64),
            Dist::Modes(m) => {
                let u: f64 = rng.gen();
                for (i, &(c, d)) in m.iter().enumerate() {
                    if u < c {
                        return (i as u8, d);
                    }
                }
                let last = m.len() - 1;
                (last as u8, m[last].1)
            }
        }
    }
}

/// The KV operation mix (--mix get:99.5,scan:0.5). Weights need not sum to 100 (normalised).
#[derive(Clone, Debug)]
pub struct Mix {
    /// (op, cumulative probability)
    pub ops: Vec<(Op, f64)>,
}

pub fn parse_op(s: &str) -> Result<Op, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "get" => Ok(Op::Get),
        "put" => Ok(Op::Put),
        "del" => Ok(Op::Del),
        "scan" => Ok(Op::Scan),
        o => Err(format!("unknown op '{o}' (get, put, del, scan)")),
    }
}

impl Mix {
    pub fn parse(s: &str) -> Result<Mix, String> {
        let err = |m: String| format!("--mix '{s}': {m}");
        let mut raw: Vec<(Op, f64)> = Vec::new();
        for item in s.split(',') {
            let (op, w) = item
                .split_once(':')
                .ok_or_else(|| err(format!("'{item}' is not OP:PERCENT")))?;
            let op = parse_op(op).map_err(&err)?;
            if raw.iter().any(|(o, _)| *o == op) {
                return Err(err(format!("{} given twice", op.name())));
            }
            let w = parse_percent(w, op.name()).map_err(&err)?;
            raw.push((op, w));
        }
        let total: f64 = raw.iter().map(|(_, w)| w).sum();
        if total <= 0.0 {
            return Err(err("the weights sum to 0".into()));
        }
        let mut acc = 0.0;
        let ops = raw
            .into_iter()
            .map(|(o, w)| {
                acc += w / total;
                (o, acc)
            })
            .collect::<Vec<_>>();
        Ok(Mix { ops })
    }

    pub fn class_names(&self) -> Vec<String> {
        self.ops.iter().map(|(o, _)| o.name().to_string()).collect()
    }

    pub fn sample<R: Rng>(&self, rng: &mut R) -> u8 {
        let u: f64 = rng.gen();
        for (i, &(_, c)) in self.ops.iter().enumerate() {
            if u < c {
                return i as u8;
            }
        }
        (self.ops.len() - 1) as u8
    }
}

/// --service get=1us,scan=500us: nominal service time per op (for KV slowdowns).
pub fn parse_service(s: &str) -> Result<Vec<(Op, u64)>, String> {
    let err = |m: String| format!("--service '{s}': {m}");
    let mut v = Vec::new();
    for item in s.split(',') {
        let (op, t) = item
            .split_once('=')
            .ok_or_else(|| err(format!("'{item}' is not OP=TIME")))?;
        let op = parse_op(op).map_err(&err)?;
        let t = parse_duration_ns(t).map_err(&err)?;
        if t == 0 {
            return Err(err(format!("{}: the service time must be > 0", op.name())));
        }
        v.push((op, t));
    }
    Ok(v)
}

/// "1", "0,1", "2-3,5" -> CPU numbers.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>, String> {
    let err = |m: String| format!("--cpu '{s}': {m}");
    let mut v = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        let num = |x: &str| {
            x.parse::<usize>()
                .map_err(|_| err(format!("'{x}' is not a CPU number")))
        };
        if let Some((a, b)) = item.split_once('-') {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(err(format!("empty range {item}")));
            }
            v.extend(a..=b);
        } else {
            v.push(num(item)?);
        }
    }
    if v.iter().any(|&c| c >= 1024) {
        return Err(err("CPU numbers must be < 1024".into()));
    }
    v.sort();
    v.dedup();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("10us").unwrap(), 10_000);
        assert_eq!(parse_duration_ns("500ns").unwrap(), 500);
        assert_eq!(parse_duration_ns("0.5ms").unwrap(), 500_000);
        assert_eq!(parse_duration_ns("2s").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration_ns("3µs").unwrap(), 3_000);
        assert!(parse_duration_ns("10").unwrap_err().contains("unit"));
        assert!(parse_duration_ns("10xs").unwrap_err().contains("unit"));
        assert!(parse_duration_ns("us").is_err());
        assert!(parse_duration_ns("1.2.3us").is_err());
        assert!(parse_duration_ns("").is_err());
    }

    #[test]
    fn dists() {
        assert!(matches!(Dist::parse("fixed:10us").unwrap(), Dist::Fixed(10_000)));
        let d = Dist::parse("bimodal:99.5:500ns:500us").unwrap();
        assert_eq!(d.class_names(), vec!["short", "long"]);
        assert!((d.mean_ns() - (0.995 * 500.0 + 0.005 * 500_000.0)).abs() < 1e-6);
        let t = Dist::parse("trimodal:90:1us:9:10us:1ms").unwrap();
        assert_eq!(t.class_names().len(), 3);
        for bad in [
            "", "fixed", "fixed:10", "fixed:10us:3", "exp:0us", "gauss:1us", "bimodal:101:1us:2us",
            "bimodal:50:1us", "trimodal:60:1us:50:2us:3us", "lognormal:1us", "bimodal:x:1us:2us",
        ] {
            assert!(Dist::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn sample_moments() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let n = 400_000;
        for (spec, mean, sd) in [("exp:10us", 10_000.0, 10_000.0), ("lognormal:1us:10us", 1000.0, 10_000.0)] {
            let d = Dist::parse(spec).unwrap();
            let xs: Vec<f64> = (0..n).map(|_| d.sample(&mut rng).1 as f64).collect();
            let m = xs.iter().sum::<f64>() / n as f64;
            assert!((m - mean).abs() / mean < 0.05, "{spec}: mean {m}");
            if spec.starts_with("exp") {
                let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
                assert!((v.sqrt() - sd).abs() / sd < 0.05, "{spec}: sd {}", v.sqrt());
            }
        }
        let d = Dist::parse("bimodal:90:1us:100us").unwrap();
        let longs = (0..n).filter(|_| d.sample(&mut rng).0 == 1).count();
        assert!((longs as f64 / n as f64 - 0.1).abs() < 0.005);
    }

    #[test]
    fn mixes() {
        let m = Mix::parse("get:99.5,scan:0.5").unwrap();
        assert_eq!(m.class_names(), vec!["get", "scan"]);
        assert!((m.ops[0].1 - 0.995).abs() < 1e-12);
        assert!(Mix::parse("get:50,get:50").is_err());
        assert!(Mix::parse("fetch:50").is_err());
        assert!(Mix::parse("get").is_err());
        assert!(Mix::parse("get:0").is_err());
        assert!(Mix::parse("get:-1").is_err());
    }

    #[test]
    fn services_and_cpus() {
        let s = parse_service("get=1us,scan=500us").unwrap();
        assert_eq!(s, vec![(Op::Get, 1000), (Op::Scan, 500_000)]);
        assert!(parse_service("get:1us").is_err());
        assert!(parse_service("get=0us").is_err());
        assert_eq!(parse_cpus("1").unwrap(), vec![1]);
        assert_eq!(parse_cpus("3,0-1").unwrap(), vec![0, 1, 3]);
        assert!(parse_cpus("a").is_err());
        assert!(parse_cpus("3-1").is_err());
    }
}
