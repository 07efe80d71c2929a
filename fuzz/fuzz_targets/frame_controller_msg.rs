//! The agent's side of the wire: `read_frame` of the controller's messages from a byte
//! stream, until the end or the first error. The first byte chooses, as in
//! `frame_agent_msg`, between the raw stream (even) and a body compressed and framed first
//! (odd).
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use turbo_proto::{ControllerMsg, read_frame};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let stream = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        framed(rest)
    };
    let mut reader = &stream[..];
    while let Ok(Some(_)) = read_frame::<_, ControllerMsg>(&mut reader) {}
});

fn framed(body: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(body).expect("in memory");
    let payload = z.finish().expect("in memory");
    let mut out = (payload.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&payload);
    out
}
