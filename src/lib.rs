//! turbo-play: the controller. See ARCHITECTURE.md for the parts and the data flow.

pub mod agent_binary;
pub mod modules;
pub mod playbook;
pub mod template;
pub mod yaml;
