//! turbo_play::fuzzing::template on the fuzzer's text, at most 4 KiB of it: a template
//! longer than that only repeats what a short one can do, and costs the fuzzer speed.
#![no_main]

use libfuzzer_sys::fuzz_target;

const MAX_TEMPLATE_BYTES: usize = 4096;

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_TEMPLATE_BYTES {
        return;
    }
    if let Ok(text) = std::str::from_utf8(data) {
        turbo_play::fuzzing::template(text);
    }
});
