//! What broken or hostile input does to the decoders: truncation, lying length prefixes,
//! zlib bombs, garbage, nesting past the limit, random bytes. Always an error, never a
//! panic or an allocation the input did not pay for.

use super::*;

#[test]
fn truncated_frames_are_reported() {
    let frame = encode_frame(&golden_request()).unwrap();
    for cut in [1, 3] {
        match read_frame::<_, ControllerMsg>(&mut &frame[..cut]) {
            Err(FrameError::Truncated { expected: 4, got }) => assert_eq!(got, cut),
            other => panic!("cut {cut}: {other:?}"),
        }
    }
    for cut in [4, 5, frame.len() - 1] {
        match read_frame::<_, ControllerMsg>(&mut &frame[..cut]) {
            Err(FrameError::Truncated { expected, got }) => {
                assert_eq!(expected, frame.len() - 4);
                assert_eq!(got, cut - 4);
            }
            other => panic!("cut {cut}: {other:?}"),
        }
    }
    let mut dec = FrameDecoder::new();
    dec.push(&frame[..frame.len() - 1]);
    assert!(dec.next::<ControllerMsg>().unwrap().is_none());
    assert_eq!(dec.pending_bytes(), frame.len() - 1);
    dec.push(&frame[frame.len() - 1..]);
    assert_eq!(
        dec.next::<ControllerMsg>().unwrap().unwrap(),
        golden_request()
    );
    assert_eq!(dec.pending_bytes(), 0);
}

#[test]
fn oversized_length_prefix_is_rejected_before_reading_the_body() {
    let len = MAX_FRAME_BYTES as u32 + 1;
    let mut bytes = len.to_be_bytes().to_vec();
    bytes.extend_from_slice(b"short");
    match read_frame::<_, ControllerMsg>(&mut &bytes[..]) {
        Err(FrameError::TooLarge { len: l }) => assert_eq!(l, len as usize),
        other => panic!("{other:?}"),
    }
    let mut dec = FrameDecoder::new();
    dec.push(&u32::MAX.to_be_bytes());
    assert!(matches!(
        dec.next::<ControllerMsg>(),
        Err(FrameError::TooLarge { len }) if len == !STORED_FLAG as usize
    ));
}

#[test]
fn announced_but_missing_body_is_truncation_not_a_big_allocation() {
    let bytes = (MAX_FRAME_BYTES as u32).to_be_bytes();
    assert!(matches!(
        read_frame::<_, ControllerMsg>(&mut &bytes[..]),
        Err(FrameError::Truncated { got: 0, .. })
    ));
}

/// A valid zlib stream of MAX_MESSAGE_BYTES + 1 zeros, about 1.7 MB. Written by hand
/// (one fixed-Huffman block: a literal 0, then back-references of 258 bytes at
/// distance 1) because running a compressor over 256 MiB is slow in debug builds.
fn zlib_bomb() -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u64,
        n: u32,
    }
    impl Bits {
        // Deflate packs fields LSB first...
        fn put(&mut self, value: u64, count: u32) {
            self.acc |= value << self.n;
            self.n += count;
            while self.n >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }
        // ...but Huffman codes MSB first.
        fn code(&mut self, code: u64, len: u32) {
            let reversed = (0..len).fold(0, |r, i| (r << 1) | ((code >> i) & 1));
            self.put(reversed, len);
        }
    }
    let total = MAX_MESSAGE_BYTES as u64 + 1;
    let mut bits = Bits {
        out: vec![0x78, 0x01],
        acc: 0,
        n: 0,
    };
    bits.put(1, 1); // BFINAL
    bits.put(1, 2); // BTYPE = fixed Huffman
    bits.code(0b0011_0000, 8); // literal 0
    let mut written = 1u64;
    while written + 258 <= total {
        bits.code(0b1100_0101, 8); // length code 285 = 258 bytes
        bits.code(0, 5); // distance code 0 = 1 byte back
        written += 258;
    }
    while written < total {
        bits.code(0b0011_0000, 8);
        written += 1;
    }
    bits.code(0, 7); // end of block
    bits.put(0, 7); // pad to a byte
    // Adler-32 of zeros: a stays 1, b grows by 1 per byte.
    let adler = ((total % 65521) << 16) | 1;
    bits.out.extend_from_slice(&(adler as u32).to_be_bytes());
    bits.out
}

#[test]
fn hand_made_bomb_is_valid_zlib() {
    // Checked on a small scale so the real bomb can be trusted to be a bomb, not junk.
    let mut raw = Vec::new();
    ZlibDecoder::new(&zlib_bomb()[..])
        .take(1 << 20)
        .read_to_end(&mut raw)
        .unwrap();
    assert_eq!(raw.len(), 1 << 20);
    assert!(raw.iter().all(|&b| b == 0));
}

#[test]
fn zlib_bomb_stops_at_the_message_limit() {
    let bomb = framed(&zlib_bomb());
    assert!(bomb.len() < MAX_FRAME_BYTES);
    assert!(matches!(
        read_frame::<_, ControllerMsg>(&mut &bomb[..]),
        Err(FrameError::TooLargeDecompressed)
    ));
    let mut dec = FrameDecoder::new();
    dec.push(&bomb);
    assert!(matches!(
        dec.next::<ControllerMsg>(),
        Err(FrameError::TooLargeDecompressed)
    ));
}

#[test]
fn garbage_is_corrupt_never_a_panic() {
    // Not zlib at all.
    let bytes = framed(b"this is not a zlib stream");
    assert!(matches!(
        read_frame::<_, ControllerMsg>(&mut &bytes[..]),
        Err(FrameError::Corrupt(_))
    ));
    // Valid zlib, but an enum variant that does not exist.
    let bytes = framed(&zlib(&[9, 0, 0, 0]));
    assert!(matches!(
        read_frame::<_, ControllerMsg>(&mut &bytes[..]),
        Err(FrameError::Corrupt(_))
    ));
    // A message of the other direction: decodes to nothing sensible.
    let hello = encode_frame(&golden_hello()).unwrap();
    assert!(matches!(
        read_frame::<_, ControllerMsg>(&mut &hello[..]),
        Err(FrameError::Corrupt(_))
    ));
    // Trailing bytes after a whole message.
    let mut raw = inflate(&encode_frame(&golden_request()).unwrap());
    raw.push(0);
    let bytes = framed(&zlib(&raw));
    assert!(matches!(
        read_frame::<_, ControllerMsg>(&mut &bytes[..]),
        Err(FrameError::Corrupt(_))
    ));
    // A WriteChunk whose byte vector claims 2^60 bytes: bincode's limit refuses it
    // instead of allocating.
    let mut raw = Vec::new();
    raw.extend_from_slice(&0u32.to_le_bytes()); // ControllerMsg::Request
    raw.extend_from_slice(&1u64.to_le_bytes()); // id
    raw.extend_from_slice(&[0, 0]); // check, diff
    raw.extend_from_slice(&3u32.to_le_bytes()); // Op::WriteChunk
    raw.extend_from_slice(&5u64.to_le_bytes()); // upload_id
    raw.extend_from_slice(&(1u64 << 60).to_le_bytes()); // data length
    let bytes = framed(&zlib(&raw));
    assert!(matches!(
        read_frame::<_, ControllerMsg>(&mut &bytes[..]),
        Err(FrameError::Corrupt(_))
    ));
}

/// bincode of an `AgentMsg::Reply` whose result is `levels` `Batch`es, each holding the
/// next one (the innermost one empty).
fn nested_batch_reply(levels: usize) -> Vec<u8> {
    let mut raw = Vec::new();
    raw.extend_from_slice(&1u32.to_le_bytes()); // AgentMsg::Reply
    raw.extend_from_slice(&1u64.to_le_bytes()); // id
    for level in 0..levels {
        raw.extend_from_slice(&5u32.to_le_bytes()); // OpResult::Batch
        let len = if level + 1 == levels { 0u64 } else { 1 };
        raw.extend_from_slice(&len.to_le_bytes());
    }
    raw
}

// Found by the frame fuzz target: a 96 KB frame inflating to a million nested Batches
// overflowed the stack and aborted the controller, every host with it.
#[test]
fn deeply_nested_batches_are_corrupt_not_a_stack_overflow() {
    let bytes = framed(&zlib(&nested_batch_reply(1_000_000)));
    assert!(bytes.len() < 200_000);
    match read_frame::<_, AgentMsg>(&mut &bytes[..]) {
        Err(FrameError::Corrupt(why)) => assert!(why.contains("nests deeper"), "{why}"),
        other => panic!("{other:?}"),
    }
    let mut dec = FrameDecoder::new();
    dec.push(&bytes);
    assert!(matches!(
        dec.next::<AgentMsg>(),
        Err(FrameError::Corrupt(_))
    ));
    // The same on the agent's side, and for facts nested in facts.
    let mut raw = Vec::new();
    raw.extend_from_slice(&0u32.to_le_bytes()); // ControllerMsg::Request
    raw.extend_from_slice(&1u64.to_le_bytes()); // id
    raw.extend_from_slice(&[0, 0]); // check, diff
    raw.extend_from_slice(&0u64.to_le_bytes()); // chain
    for _ in 0..100_000 {
        raw.extend_from_slice(&9u32.to_le_bytes()); // Op::Batch
        raw.extend_from_slice(&1u64.to_le_bytes());
    }
    assert!(matches!(
        read_frame::<_, ControllerMsg>(&mut &framed(&zlib(&raw))[..]),
        Err(FrameError::Corrupt(_))
    ));
    let mut deep = FactValue::Null;
    for _ in 0..crate::MAX_NESTING + 1 {
        deep = FactValue::List(vec![deep]);
    }
    let frame = encode_frame(&AgentMsg::Reply(Reply {
        id: 1,
        result: OpResult::Facts(vec![("deep".into(), deep)]),
    }))
    .unwrap();
    assert!(matches!(
        read_frame::<_, AgentMsg>(&mut &frame[..]),
        Err(FrameError::Corrupt(_))
    ));
}

#[test]
fn nesting_up_to_the_limit_still_decodes_and_the_count_resets() {
    let bytes = framed(&zlib(&nested_batch_reply(crate::MAX_NESTING)));
    let mut dec = FrameDecoder::new();
    // Twice: a refused frame before must not leave levels counted on this thread.
    dec.push(&framed(&zlib(&nested_batch_reply(crate::MAX_NESTING + 1))));
    assert!(dec.next::<AgentMsg>().is_err());
    for _ in 0..2 {
        dec.push(&bytes);
        assert!(matches!(
            dec.next::<AgentMsg>(),
            Ok(Some(AgentMsg::Reply(_)))
        ));
    }
}

#[test]
fn random_payloads_never_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let valid = inflate(&encode_frame(&golden_request()).unwrap());
    for round in 0..2000 {
        let payload: Vec<u8> = if round % 2 == 0 {
            let n = (next() % 300) as usize;
            (0..n).map(|_| next() as u8).collect()
        } else {
            // Valid zlib around a mutated valid message reaches deep into bincode.
            let mut raw = valid.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % raw.len();
                raw[at] = next() as u8;
            }
            zlib(&raw)
        };
        let _ = read_frame::<_, ControllerMsg>(&mut &framed(&payload)[..]);
        let mut dec = FrameDecoder::new();
        dec.push(&framed(&payload));
        let _ = dec.next::<AgentMsg>();
    }
}
