//! Integration tests of the real binary: on local hosts where a test is about the language,
//! against a throw-away sshd where the ssh connection is what it checks (see support/).

mod apt_sources;
mod become_su;
mod become_sudo;
mod cli_features;
mod command_modules;
mod connection;
mod control_flow;
mod debian_targets;
mod dynamic_includes;
mod everyday_modules;
mod facts;
mod fetch_find;
mod file_modules;
mod language_gaps;
mod loops_keywords;
mod module_args;
mod packages_apt;
mod packages_dnf;
mod packages_pip;
mod playbook_runs;
mod python_modules;
mod real_roles;
mod roles;
mod services;
mod ssh_config;
mod ssh_transport;
mod support;
mod task_connections;
mod templating;
mod text_modules;
mod users_groups;
mod vars_sources;
mod vault;
