//! The `agency` binary: everything lives in the `agency_cli` library.

fn main() -> std::process::ExitCode {
    agency_cli::main()
}
