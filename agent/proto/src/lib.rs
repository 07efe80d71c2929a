//! turbo-play's wire protocol, defined once and linked by both the controller and the agent.
//!
//! A frame is a 4-byte big-endian length, then that many bytes of zlib-compressed bincode
//! of one message. The agent speaks first ([`AgentMsg::Hello`]); after that the controller
//! sends [`ControllerMsg::Request`]s, pipelined, and the agent answers each with exactly one
//! [`AgentMsg::Reply`]. bincode stays behind [`frame`]: nothing else names it.

pub mod delta;
pub mod frame;
pub mod messages;
mod nesting;
mod raw_bytes;
pub mod rolling;

pub use frame::{FrameDecoder, FrameError, encode_frame, read_frame, write_frame};
pub use messages::*;
pub use nesting::MAX_NESTING;

/// Bumped on every change to [`messages`]. An agent that says another number is replaced.
pub const PROTOCOL_VERSION: u32 = 16;

/// Largest compressed frame accepted. Bulk content travels in `WriteChunk`s well below it.
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// Largest message once decompressed: a zlib bomb stops here, not at out-of-memory.
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Size of the `WriteChunk`s the controller cuts bulk content into.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Most bytes one [`Op::ReadFile`] reply carries. Well under [`MAX_FRAME_BYTES`] so that a
/// `Batch` of a few full reads still fits one frame; bigger files are paged by offset.
pub const READ_BYTES_MAX: usize = 8 << 20;

/// Smallest and largest block of a delta transfer's signatures, and the most blocks one
/// file is described by (the signatures of a huge file stay a few MiB).
pub const DELTA_BLOCK_MIN: u32 = 1 << 10;
pub const DELTA_BLOCK_MAX: u32 = 1 << 20;
pub const DELTA_BLOCKS_MAX: u64 = 1 << 17;
