//! Fixtures shared by the integration tests.

#![allow(dead_code)]

pub mod cut_proxy;
pub mod debian;
pub mod debian_scenario;
pub mod hosts;
pub mod netns;
pub mod run;
pub mod sshd;
pub mod sudo;
