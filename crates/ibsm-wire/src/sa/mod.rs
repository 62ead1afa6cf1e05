//! Subnet Administration (class 0x03): the SA MAD header with RMPP, and the records of
//! `shared/spec/sa.md`.
