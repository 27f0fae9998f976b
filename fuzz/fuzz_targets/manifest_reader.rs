//! Fuzzes policyctl's manifest reader (`-f` input): arbitrary bytes must
//! yield objects or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    policyctl::manifest::fuzz_entry(data);
});
