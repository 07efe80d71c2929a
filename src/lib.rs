//! turbo-play: the controller. See ARCHITECTURE.md for the parts and the data flow.

pub mod agent_binary;
pub mod agent_session;
pub mod connection;
pub mod yaml;
