//! The controller's side of the wire: the push decoder of the agent's messages, fed in
//! pieces as a socket delivers them. The first byte chooses how the rest is read: even, as
//! the raw stream; odd, as a message body that is compressed and framed first, so that
//! the fuzzer reaches bincode without having to forge zlib checksums.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use turbo_proto::{AgentMsg, FrameDecoder};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let stream = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        framed(rest)
    };
    let piece = 1 + usize::from(mode >> 1);
    let mut decoder = FrameDecoder::new();
    for chunk in stream.chunks(piece) {
        decoder.push(chunk);
        loop {
            match decoder.next::<AgentMsg>() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                // The session stops reading at the first error.
                Err(_) => return,
            }
        }
    }
});

fn framed(body: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(body).expect("in memory");
    let payload = z.finish().expect("in memory");
    let mut out = (payload.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&payload);
    out
}
