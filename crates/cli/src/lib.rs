//! (in progress) The agency CLI.
pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
