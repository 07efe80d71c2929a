//! Output: executor events in, Ansible-shaped text out.

pub mod console;
pub mod events;
pub mod json;
pub mod merged_recap;
pub mod minimal;
pub mod options;
pub mod progress;
pub mod task_error;
pub mod warnings;
