//! End-to-end tests of the `agency` binary: each runs the real executable in a temporary git repository.
//! One test binary, small helpers in `support`.

mod support;

mod config;
mod control;
mod init;
mod variety;
mod watch_inspect;
