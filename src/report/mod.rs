//! Output: executor events in, Ansible-shaped text out.

pub mod console;
pub mod events;
pub mod json;
pub mod warnings;
