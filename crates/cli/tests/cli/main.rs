//! End-to-end tests of the `agency` binary: each runs the real executable in a temporary git repository.
//! One test binary, small helpers in `support`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod ack;
mod budget;
mod budget_external;
mod cache_share;
mod cancel;
mod cli_doc;
mod closed_pipe;
mod config;
mod control;
mod dashboard;
mod dashboard_browser;
mod demo;
mod escape_claude;
mod faults;
mod first_use;
mod gate_service;
mod gc;
mod goal;
mod goal_e2e;
mod goal_hooks;
mod goal_loop;
mod hook;
mod hook_claude;
mod hook_codex;
mod hook_fail_closed;
mod hook_support;
mod hook_tasks;
mod hook_tasks_claude;
mod hook_teammate;
mod init;
mod inspect_tui;
mod inspect_views;
mod kill_soak;
mod models;
mod personalities;
mod pi;
mod postgres;
mod replay;
mod resume;
mod resume_orphan;
mod run_external;
mod run_external_judge;
mod sandbox_off;
mod secrets;
mod show;
mod teachback;
mod teachback_gate;
mod teachback_wait;
mod variety;
mod watch_inspect;
mod watch_run;
