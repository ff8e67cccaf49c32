//! The `agency` binary: everything lives in the `agency_cli` library.

/// mimalloc rather than glibc's malloc: the runner allocates and frees many small values per brief (events,
/// briefs, process arguments), and glibc's allocator was an eighth of its CPU (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    agency_cli::main()
}
