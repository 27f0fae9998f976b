//! Replays every file of the fuzz corpus (`fuzz/corpus/namespace_filter/`)
//! through the fuzz entry point: no panic, and every filter that compiles
//! resolves as Velero does. Crashers added there become regression tests.

use std::path::Path;

#[test]
fn fuzz_corpus_resolves_like_velero_without_panicking() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/namespace_filter");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        backup_queue::reference::fuzz_namespace_filter(&data);
        count += 1;
    }
    assert!(
        count >= 10,
        "corpus at {} has only {count} files",
        dir.display()
    );
}
