//! (in progress) Model providers.
