//! (in progress) The blackboard.
