//! Fuzzes the repository-maintenance job ConfigMap loader
//! (`affinity-translate`'s `maintenance`): any bytes as an entry must load
//! or fail with an error, never panic; whatever loads must resolve, build a
//! job and validate without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    affinity_translate::maintenance::fuzz_entry(data);
});
