//! Integration tests against real services (a throw-away sshd per test; see support/).

mod connection;
mod playbook_runs;
mod support;
mod templating;
