//! Printing to stdout for the whole crate. `lib.rs` defines `print!` and `println!` over [`print`], so every
//! command's output goes through here rather than through std's macros, which panic when stdout's reader
//! has gone away.
//!
//! A closed pipe (`agency runs | head -1`) is recognised by its [`io::ErrorKind::BrokenPipe`], as ripgrep
//! does: the reader has what it wanted, so the process ends with status 0 and says nothing. Output written
//! through a `Write` handle (the live log's follower) returns the error instead, and `main` treats a
//! [`crate::error::CommandError`] made from it the same way. Any other write failure (a full disk) is as
//! loud as std's macros make it.

use std::fmt;
use std::io::{self, Write};

/// Writes `args` to stdout; what std's `print!` does, except on a closed pipe.
pub fn print(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(err) = out.write_fmt(args) {
        failed(&err);
    }
}

/// Ends the process quietly when `err` says stdout's reader has gone away; otherwise panics as std's macros do.
fn failed(err: &io::Error) -> ! {
    if is_closed_pipe(err) {
        // Nothing more can reach the reader, and nothing is wrong: stop here, as `head`'s writers do.
        std::process::exit(0);
    }
    panic!("failed printing to stdout: {err}");
}

/// Whether `err` is a write to a pipe whose reader has closed it.
pub fn is_closed_pipe(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::BrokenPipe
}
