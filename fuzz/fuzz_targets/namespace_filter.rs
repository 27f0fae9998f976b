//! Fuzzes backup namespace filters (`backup-queue`): compiling and matching
//! any includes/excludes never panics, and a filter that compiles resolves
//! to exactly what Velero's own resolution gives over the same namespaces.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    backup_queue::reference::fuzz_namespace_filter(data);
});
