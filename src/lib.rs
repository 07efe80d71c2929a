//! turbo-play: the controller. See ARCHITECTURE.md for the parts and the data flow.

pub mod agent_binary;
pub mod agent_session;
pub mod booleans;
pub mod cli;
pub mod config;
pub mod connection;
pub mod executor;
pub mod fnmatch;
pub mod inventory;
pub mod listing;
pub mod modules;
pub mod playbook;
pub mod report;
pub mod shell_words;
pub mod template;
pub mod tilde;
pub mod vars_file;
pub mod yaml;
