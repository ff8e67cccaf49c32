//! Links the `agency` binary as a position-independent executable (the toolchain's default: the dashboard
//! and the runner parse untrusted input, so the executable's own image keeps address randomisation) with its
//! relative relocations packed (`-z pack-relative-relocs`, DT_RELR). `agency hook` runs once per tool call
//! of every agent, so its process start is most of its cost, and a PIE of this size has ~13,000 relative
//! relocations: as a classic RELA table (24 bytes each) the loader reads ~300 KiB of it at every start, as
//! RELR a few KiB. docs/performance.md (*PIE again*) has the timings against the `-no-pie` build this
//! replaced.
//!
//! rustc links x86_64 Linux binaries with its bundled lld, which packs them and records a need for
//! `GLIBC_ABI_DT_RELR` (glibc 2.36+, the glibc it was linked against anyway); GNU ld 2.38+ does the same,
//! and older linkers warn that they ignore the option and link the plain relocations, which work as before.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
