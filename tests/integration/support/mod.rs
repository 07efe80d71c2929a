//! Fixtures shared by the integration tests.

#![allow(dead_code)]

pub mod sshd;
pub mod hosts;
pub mod run;
