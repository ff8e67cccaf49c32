//! Links the `agency` binary as a position-dependent executable on Linux. `agency hook` runs once per tool
//! call of every agent, so its process start is most of its cost: a PIE binary of this size has ~13,000
//! relative relocations the dynamic loader applies at every start, copy-on-writing every page they touch
//! (163 page faults per start against 104 without; docs/hooks.md has the timings). The code stays
//! position-independent; only the executable's own image loses address randomisation (shared libraries,
//! heap and stack keep it).

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
