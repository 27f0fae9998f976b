//! Fuzzes the node-agent configuration loader (`affinity-translate`): any
//! bytes must load or fail with an error, never panic; whatever loads must
//! translate and compile without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    affinity_translate::fuzz_entry(data);
});
