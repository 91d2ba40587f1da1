//! build.rs - the Jiffy version for `tokio-synth --version`, read from include/jiffy/jiffy.h (the
//! only place it is written: JIFFY_VERSION_MAJOR/MINOR/PATCH) into the JIFFY_VERSION variable of
//! the compilation. Standard library only; Cargo reruns it when the header changes.

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let header = dir.join("../../../include/jiffy/jiffy.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let text = std::fs::read_to_string(&header).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the Jiffy version is read from it)",
            header.display()
        )
    });
    let part = |name: &str| -> String {
        let prefix = format!("#define JIFFY_VERSION_{name} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .unwrap_or_else(|| panic!("{}: no numeric JIFFY_VERSION_{name}", header.display()))
    };
    println!(
        "cargo:rustc-env=JIFFY_VERSION={}.{}.{}",
        part("MAJOR"),
        part("MINOR"),
        part("PATCH")
    );
}
