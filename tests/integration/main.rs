//! Integration tests against real services (a throw-away sshd per test; see support/).

mod cli_features;
mod connection;
mod control_flow;
mod dynamic_includes;
mod facts;
mod file_modules;
mod language_gaps;
mod loops_keywords;
mod playbook_runs;
mod real_roles;
mod roles;
mod support;
mod task_connections;
mod templating;
mod vars_sources;
