//! turbo_play::fuzzing::inventory_yaml on the fuzzer's text (inputs that are not UTF-8 are skipped:
//! the file readers refuse them before any parser runs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        turbo_play::fuzzing::inventory_yaml(text);
    }
});
