//! turbo_play::fuzzing::vault on the fuzzer's bytes, as a vaulted file's content.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    turbo_play::fuzzing::vault(data);
});
