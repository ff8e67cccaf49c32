//! (in progress) plan.md goal contracts: a tolerant scanner and line-exact patches.
