//! Integration tests against real services (a throw-away sshd per test; see support/).

mod connection;
mod control_flow;
mod facts;
mod loops_keywords;
mod playbook_runs;
mod support;
mod templating;
mod vars_sources;
