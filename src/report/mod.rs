//! Output: executor events in, Ansible-shaped text out.

pub mod console;
pub mod events;
pub mod json;
pub mod merged_recap;
pub mod minimal;
pub mod progress;
pub mod result_dump;
pub mod task_error;
pub mod warnings;
