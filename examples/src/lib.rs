//! The ibsm examples live next to this crate's `Cargo.toml` (`cargo run --example NAME`);
//! this library is empty. The MAD decoder that used to be an example is the
//! `ibsm-mad-decode` tool of `ibsm-tools` now.
