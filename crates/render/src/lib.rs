//! `agency-render`: blackboard rows turned into text for humans, as plain functions over core types, so
//! every front end prints the same lines. [`log`] is the live log (`agency watch`, `agency run`'s
//! follower, `agency inspect`'s events and the dashboard's live log); [`tree`] is `agency inspect`'s tree
//! of a run. Reading the blackboard as it fills is the caller's part (the CLI's `render::follow`, the
//! dashboard's event stream).

pub mod log;
pub mod tree;
